import type { FastifyBaseLogger } from 'fastify'
import { v7 as uuidv7 } from 'uuid'
import type { Clock } from '../../clock.ts'
import type { Viewer } from '../../domain/principal.ts'
import type { PolledJob } from '../../jobs/job.ts'
import type { Store, StoredEvent } from '../../store/store.ts'
import type { NewDelivery } from './store.ts'
import type { Subscription } from './subscriptions-store.ts'

export interface FanOutOptions {
  readonly store: Store
  readonly log: FastifyBaseLogger
  readonly pollMs: number
  readonly retentionH: number
  /** Called after a commit that queued deliveries. */
  readonly queued: () => void
  /** What retention is measured by (the composition root's, src/context.ts). */
  readonly clock: Clock
}

/** The fan-out's job name: wake it after a commit that recorded an event for it (a ping). */
export const WEBHOOK_FAN_OUT_JOB = 'webhook-fan-out'

/** Events read per unit of work. */
const BATCH = 200
/** Events passed over per unit of work while no subscription exists (only their ids are read). */
const SKIP = 10_000
const PRUNE_INTERVAL_MS = 15 * 60_000
const SYSTEM: Viewer = { subject: 'system', scopes: new Set(['admin']), kind: 'jwt' }

function wants (s: Subscription, e: Omit<StoredEvent, 'data' | 'actor'>): boolean {
  if (e.webhookId !== null) return e.webhookId === s.id
  if (s.afterEventId >= e.id) return false
  const events = JSON.parse(s.events) as string[]
  return events[0] === '*' || events.includes(e.type)
}

/**
 * Turns events into deliveries, one per matching subscription, in units of work that also move the
 * fan-out's position: a crash before the commit leaves the position where it was, and the events
 * are fanned out again by whichever instance runs next (at least once; never twice, since the
 * position and the deliveries commit together). One instance at a time holds the position.
 * Also applies retention: events older than EVENTS_RETENTION_H (once fanned out), finished
 * deliveries as old, and the previous secrets of rotations older than 24 h.
 */
export class FanOut implements PolledJob {
  readonly name = WEBHOOK_FAN_OUT_JOB
  readonly pollMs: number
  private lastPrune = 0

  constructor (private readonly opts: FanOutOptions) {
    this.pollMs = opts.pollMs
  }

  async tick (): Promise<boolean> {
    const now = this.opts.clock.now()
    const { read, queued, more } = await this.opts.store.transaction(async uow => {
      const position = await uow.events.claimFanOut()
      if (position === null) return { read: 0, queued: 0, more: false }
      // No subscription to deliver to and no event addressed to one (a ping): the position moves
      // past the new events without reading them. The events are read before the subscriptions, as
      // below: a subscription made since starts after them.
      const through = await uow.events.untargetedThrough(position, SKIP)
      const enabled = await uow.webhookSubscriptions.enabled()
      if (enabled.length === 0 && through !== null && through > position) {
        await uow.events.fannedOut(through)
        // Perhaps more beyond the window: look again at once.
        return { read: 0, queued: 0, more: true }
      }
      // A delivery refers to its event (its body is read when it is sent): the data is not read here.
      const events = await uow.events.heads(position, BATCH)
      if (events.length > 0) {
        const subscriptions = events.some(e => e.webhookId !== null)
          ? (await uow.webhookSubscriptions.list({ filter: {}, sort: [{ key: 'id', direction: 'asc' }], limit: 1_000_000 }, SYSTEM)).items
          : enabled
        const deliveries: NewDelivery[] = []
        for (const e of events) {
          for (const s of subscriptions) {
            if (!wants(s, e) || (e.webhookId === null && s.status !== 'enabled')) continue
            // The body is the event's, the same bytes on every attempt.
            // Time-ordered ids (UUIDv7): the rows go in at the end of the key's index rather than on
            // a random page of it, so a commit writes a few pages instead of one per delivery.
            deliveries.push({ id: `dlv_${uuidv7()}`, webhookId: s.id, eventId: e.id, eventType: e.type, url: s.url, payload: null })
          }
        }
        await uow.webhooks.enqueueAll(deliveries, now)
        const n = deliveries.length
        await uow.events.fannedOut(events.at(-1)!.id)
        if (n > 0) uow.onCommit(this.opts.queued)
        return { read: events.length, queued: n, more: events.length === BATCH }
      }
      if (now.getTime() - this.lastPrune >= PRUNE_INTERVAL_MS) {
        this.lastPrune = now.getTime()
        const cutoff = new Date(now.getTime() - this.opts.retentionH * 3600_000)
        const deliveries = await uow.webhooks.deleteFinishedBefore(cutoff)
        // Not an event a delivery still refers to (its body is read from it), nor any after it.
        const held = await uow.webhooks.oldestEventHeld()
        const pruned = await uow.events.prune(cutoff, held === null ? position : Math.min(position, held - 1))
        await uow.webhookSubscriptions.forgetExpiredSecrets(now)
        if (pruned + deliveries > 0) this.opts.log.info({ events: pruned, deliveries }, 'deleted events and deliveries past their retention')
      }
      return { read: 0, queued: 0, more: false }
    })
    if (queued > 0) this.opts.log.debug({ events: read, deliveries: queued }, 'events fanned out')
    return more
  }
}
