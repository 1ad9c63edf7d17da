import type { ProblemDeclaration } from '../../catalogue.ts'
import type { MessageTemplates } from '../../messages.ts'

declare module '../../errors.ts' { interface ResourceProblems { EXPORT_NOT_FOUND: true } }
declare module '../../messages.ts' { interface MessageParams { NO_WEBHOOK_SECRET: Record<never, never> } }

/** Its problem codes. */
export const exportsProblems = {
  EXPORT_NOT_FOUND: {
    status: 404,
    title: 'Export not found',
    detail: 'No export with this id exists.',
    translations: {
      de: { title: 'Export nicht gefunden', detail: 'Es gibt keinen Export mit dieser ID.' },
      fr: { title: 'Export introuvable', detail: 'Aucun export ne porte cet identifiant.' },
      es: { title: 'Exportación no encontrada', detail: 'No existe ninguna exportación con este id.' },
    },
  },
} satisfies Readonly<Record<string, ProblemDeclaration>>

/** `callback_url` given to a service that cannot sign webhooks (no WEBHOOK_SECRET): 422 naming it. */
export const exportsMessages = {
  en: { NO_WEBHOOK_SECRET: () => 'cannot be used: this service has no WEBHOOK_SECRET to sign webhooks with; leave it out and poll the export instead' },
  de: { NO_WEBHOOK_SECRET: () => 'ist nicht möglich: dieser Dienst hat kein WEBHOOK_SECRET zum Signieren von Webhooks; lassen Sie es weg und fragen Sie den Export ab' },
  fr: { NO_WEBHOOK_SECRET: () => 'est impossible : ce service n’a pas de WEBHOOK_SECRET pour signer les webhooks ; omettez-le et interrogez l’export' },
  es: { NO_WEBHOOK_SECRET: () => 'no es posible: este servicio no tiene WEBHOOK_SECRET para firmar webhooks; omítalo y consulte la exportación' },
} satisfies MessageTemplates<'NO_WEBHOOK_SECRET'>
