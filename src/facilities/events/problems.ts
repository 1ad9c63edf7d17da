import type { ProblemDeclaration } from '../../catalogue.ts'

declare module '../../errors.ts' { interface ResourceProblems { WEBHOOK_NOT_FOUND: true, DELIVERY_NOT_FOUND: true, WEBHOOK_SECRET_NOT_SET: true } }

/** Its problem codes. */
export const webhooksProblems = {
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
  WEBHOOK_SECRET_NOT_SET: {
    // Not 503: retrying cannot help until the operator acts, and nothing is out of service.
    status: 409,
    title: 'WEBHOOK_SECRET not set',
    detail: 'On PostgreSQL the key that seals webhook subscriptions\' signing secrets must come from the operator, the same on every instance: until WEBHOOK_SECRET is set, no subscription can be made or its secret rotated.',
    translations: {
      de: { title: 'WEBHOOK_SECRET nicht gesetzt', detail: 'Mit PostgreSQL muss der Schlüssel, der die Signiergeheimnisse der Webhook-Abonnements versiegelt, vom Betreiber kommen, auf jeder Instanz derselbe: Solange WEBHOOK_SECRET nicht gesetzt ist, kann kein Abonnement angelegt und kein Geheimnis erneuert werden.' },
      fr: { title: 'WEBHOOK_SECRET non défini', detail: 'Avec PostgreSQL, la clé qui scelle les secrets de signature des abonnements webhook doit venir de l’exploitant, la même sur chaque instance : tant que WEBHOOK_SECRET n’est pas défini, aucun abonnement ne peut être créé ni son secret renouvelé.' },
      es: { title: 'WEBHOOK_SECRET no definido', detail: 'Con PostgreSQL, la clave que sella los secretos de firma de las suscripciones de webhook debe venir del operador, la misma en cada instancia: mientras WEBHOOK_SECRET no esté definido, no se puede crear ninguna suscripción ni renovar su secreto.' },
    },
  },
} satisfies Readonly<Record<string, ProblemDeclaration>>
