import type { Part } from '../../http/resources.ts'
import { webhookOutbox } from './outbox.ts'
import { eventLogSettings } from './settings.ts'
import { deliveriesStore, eventsStore } from './store-module.ts'

export { eventsResource } from './events-resource.ts'
export { webhooksResource } from './webhooks-resource.ts'
export { CALLBACK_URL_MAX, addressAllowed, checkCallbackUrl, classifyAddress, guardedLookup } from './callback-url.ts'
export type { NewDelivery, WebhookDelivery } from './store.ts'

/**
 * The event log and the webhook outbox every part writes to in its unit of work (`uow.events`,
 * `uow.webhooks`), and the outbox's sender. Its HTTP faces are the resources beside it: GET /events
 * (`eventsResource`) and the subscriptions (`webhooksResource`).
 */
export const eventsFacility: Part = {
  name: 'event-log',
  settings: eventLogSettings,
  store: [eventsStore, deliveriesStore],
  outbox: webhookOutbox,
}
