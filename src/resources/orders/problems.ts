import type { ProblemDeclaration } from '../../catalogue.ts'

declare module '../../errors.ts' { interface ResourceProblems { ORDER_NOT_FOUND: true, ORDER_NOT_CANCELLABLE: true } }

/** Its problem codes. */
export const ordersProblems = {
  ORDER_NOT_FOUND: {
    status: 404,
    title: 'Order not found',
    detail: 'No order with this id exists, or you may not see it.',
    translations: {
      de: { title: 'Bestellung nicht gefunden', detail: 'Es gibt keine Bestellung mit dieser ID, oder Sie dürfen sie nicht sehen.' },
      fr: { title: 'Commande introuvable', detail: 'Aucune commande ne porte cet identifiant, ou vous ne pouvez pas la voir.' },
      es: { title: 'Pedido no encontrado', detail: 'No existe ningún pedido con este id, o no puede verlo.' },
    },
  },
  ORDER_NOT_CANCELLABLE: {
    status: 409,
    title: 'Order not cancellable',
    detail: 'Only an order that is PROCESSING can be cancelled.',
    translations: {
      de: { title: 'Bestellung nicht stornierbar', detail: 'Nur eine Bestellung im Status PROCESSING kann storniert werden.' },
      fr: { title: 'Commande non annulable', detail: 'Seule une commande au statut PROCESSING peut être annulée.' },
      es: { title: 'Pedido no cancelable', detail: 'Solo se puede cancelar un pedido en estado PROCESSING.' },
    },
  },
} satisfies Readonly<Record<string, ProblemDeclaration>>
