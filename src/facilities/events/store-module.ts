import type { StoreModule } from '../../store/module.ts'
import { WebhooksRepository } from './deliveries-repository.ts'
import { EventsRepository } from './events-repository.ts'
import * as actor from './0001-actor.ts'

/**
 * The event log's tables are the core's first ones (migrations `0001-initial`, `core/0001-events`,
 * `core/0003-delivery-queues`, frozen under those names), so these modules bring no migration.
 * A unit of work's events are written last, just before its commit.
 */
export const eventsStore: StoreModule = {
  name: 'events',
  migrations: { 'events/0001-actor': actor.migration },
  repository: (db, dialect, unit) => {
    const events = new EventsRepository(db, dialect, unit === undefined ? null : [], unit?.actor ?? null)
    unit?.beforeCommit(async now => { await events.flush(now) })
    return events
  },
}

/** The webhook outbox: every delivery, a subscription's or a resource's callback. */
export const deliveriesStore: StoreModule = {
  name: 'webhooks',
  migrations: {},
  repository: (db, dialect) => new WebhooksRepository(db, dialect),
}
