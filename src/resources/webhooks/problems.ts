import { registerProblems } from '../../errors.ts'

declare module '../../errors.ts' { interface ResourceProblems { WEBHOOK_NOT_FOUND: true, DELIVERY_NOT_FOUND: true } }

registerProblems({
  WEBHOOK_NOT_FOUND: {
    status: 404,
    title: 'Webhook subscription not found',
    detail: 'No webhook subscription with this id exists.',
    translations: {
      de: { title: 'Webhook-Abonnement nicht gefunden', detail: 'Es gibt kein Webhook-Abonnement mit dieser ID.' },
      fr: { title: 'Abonnement webhook introuvable', detail: 'Aucun abonnement webhook ne porte cet identifiant.' },
      es: { title: 'Suscripción de webhook no encontrada', detail: 'No existe ninguna suscripción de webhook con este id.' },
    },
  },
  DELIVERY_NOT_FOUND: {
    status: 404,
    title: 'Delivery not found',
    detail: 'This webhook subscription has no delivery with this id.',
    translations: {
      de: { title: 'Zustellung nicht gefunden', detail: 'Dieses Webhook-Abonnement hat keine Zustellung mit dieser ID.' },
      fr: { title: 'Livraison introuvable', detail: 'Cet abonnement webhook n’a aucune livraison avec cet identifiant.' },
      es: { title: 'Entrega no encontrada', detail: 'Esta suscripción de webhook no tiene ninguna entrega con este id.' },
    },
  },
})
