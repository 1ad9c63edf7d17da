import { Gauge } from 'prom-client'
import type { Viewer } from '../../domain/principal.ts'
import type { Facility, PartContext, Services } from '../../http/contract/resources.ts'
import type { Job } from '../../jobs/job.ts'
import { eventsResource } from './events-resource.ts'
import { FanOut } from './fan-out.ts'
import { webhookSender } from './outbox.ts'
import { sealingOf } from './secrets.ts'
import { eventLogSettings } from './settings.ts'
import { deliveriesStore, eventsStore } from './store-module.ts'
import { StreamHub } from './stream-hub.ts'
import { webhooksResource } from './webhooks-resource.ts'

export { CALLBACK_URL_MAX, addressAllowed, checkCallbackUrl, classifyAddress, guardedLookup } from './callback-url.ts'
export { WEBHOOK_DELIVERIES_JOB } from './webhook-sender.ts'
export type { NewDelivery, WebhookDelivery } from './store.ts'

const SYSTEM: Viewer = { subject: 'system', scopes: new Set(['admin']), kind: 'jwt' }

/** One reader of the log for all of this instance's streams; streams end when the app closes. */
function eventServices ({ config, store, metrics, lifecycle }: PartContext): Partial<Services> {
  const gauge = new Gauge({ name: 'event_streams_open', help: 'Change streams (GET /events) open on this instance', registers: [metrics] })
  const hub = new StreamHub(store, config.eventLog.eventsPollMs, open => { gauge.set(open) })
  // Before the server stops accepting: open streams would otherwise hold the close until its grace runs out.
  lifecycle.onClosing(async () => { hub.end() })
  return { eventStreams: hub, webhookSealing: sealingOf(config) }
}

/**
 * The facility's jobs: the sender of the outbox (deliveries, under leases), the fan-out of events
 * to subscriptions' deliveries (one instance at a time holds its position), and this instance's
 * reading of the log for its streams.
 */
function eventJobs (ctx: PartContext): Job[] {
  const { config, store, log: root, services, clock } = ctx
  const log = root.child({ component: 'webhooks' })
  const { box, source } = services.webhookSealing
  // Once per start; the key itself is never logged.
  if (source.kind === 'made' && source.now) {
    log.info({ file: source.file }, 'made the key that seals webhook subscriptions\' secrets; back it up, apart from the database')
  }
  if (source.kind === 'missing') {
    log.warn('WEBHOOK_SECRET is not set: on PostgreSQL every instance must share the key that seals webhook subscriptions\' ' +
      'secrets, so POST /webhooks answers 409 WEBHOOK_SECRET_NOT_SET until it is set')
  }
  const sender = webhookSender(ctx)
  sender.serveSubscriptions({
    async target (id) {
      const s = await store.webhookSubscriptions.find(id, SYSTEM)
      if (s === null || s.status !== 'enabled' || box === null) return null
      const previous = s.previousSecret !== null && s.previousSecretUntil !== null && Date.parse(s.previousSecretUntil) > clock.now().getTime() ? [box.open(s.previousSecret)] : []
      return { url: s.url, secrets: [box.open(s.secret), ...previous] }
    },
    async ended (uow, id, delivered) {
      if (!await uow.webhookSubscriptions.ended(id, delivered, clock.now())) return
      await uow.webhooks.failPending(id, 'The subscription was disabled after 20 failed deliveries in a row.', clock.now())
      uow.onCommit(() => { log.warn({ subscription_id: id }, 'webhook subscription disabled: 20 deliveries in a row failed') })
    },
  })
  const fanOut = new FanOut({
    store,
    log,
    pollMs: config.eventLog.eventsPollMs,
    retentionH: config.eventLog.eventsRetentionH,
    queued: () => { ctx.jobs.wake(sender.name) },
    clock,
  })
  return [sender, fanOut, services.eventStreams.job]
}

/**
 * The event log and the webhook outbox every part writes to in its unit of work (`uow.events`,
 * `uow.webhooks`), the jobs that send the outbox and fan events out to subscriptions, and the
 * routes that serve them: GET /events (`eventsResource`) and the subscriptions (`webhooksResource`).
 * Wake the sender with `jobs.wake(WEBHOOK_DELIVERIES_JOB)` after a commit that queued a delivery.
 */
export const eventsFacility: Facility = {
  name: 'event-log',
  settings: eventLogSettings,
  store: [eventsStore, deliveriesStore],
  services: eventServices,
  jobs: eventJobs,
  resources: [webhooksResource, eventsResource],
}
