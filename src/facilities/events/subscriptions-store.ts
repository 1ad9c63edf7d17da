import type { Kysely } from 'kysely'
import type { Viewer } from '../../domain/principal.ts'
import type { StoreModule } from '../../store/module.ts'
import { type OwnedColumns, type OwnedRecord, OwnedRows } from '../../store/owned-rows.ts'
import type { Database, DialectParts, Timestamp } from '../../store/tables.ts'
import * as m from './0001-webhooks.ts'

/** After this many deliveries in a row were given up, a subscription is disabled. */
export const DISABLE_AFTER_FAILURES = 20
/** How long the previous secret still signs after a rotation. */
export const ROTATION_OVERLAP_MS = 24 * 3600_000

export type SubscriptionStatus = 'enabled' | 'disabled'

/** A webhook subscription as the store keeps it; `events` is JSON, secrets are sealed. */
export interface Subscription extends OwnedRecord {
  status: SubscriptionStatus
  url: string
  events: string
  description: string | null
  disabledReason: string | null
  secret: string
  previousSecret: string | null
  previousSecretUntil: string | null
  failures: number
  afterEventId: number
}

interface SubscriptionColumns extends OwnedColumns {
  status: SubscriptionStatus
  url: string
  events: string
  description: string | null
  disabled_reason: string | null
  secret: string
  previous_secret: string | null
  previous_secret_until: Timestamp | null
  failures: number
  after_event_id: number
}

declare module '../../store/tables.ts' { interface Database { webhook_subscriptions: SubscriptionColumns } }
declare module '../../store/store.ts' { interface Repositories { readonly webhookSubscriptions: SubscriptionsRepository } }

/** What a PATCH may change. */
export interface SubscriptionChanges {
  url?: string
  events?: string
  description?: string | null
  enabled?: boolean
}

/** Subscriptions: owned rows (an admin sees all), plus their changes, secrets and failure count. */
export class SubscriptionsRepository extends OwnedRows<Subscription> {
  private readonly q: Kysely<Database>
  private readonly ts: (d: Date) => Timestamp

  constructor (db: Kysely<Database>, dialect: DialectParts) {
    super(db, dialect, { table: 'webhook_subscriptions' })
    this.q = db
    this.ts = dialect.timestamp
  }

  /** Applies `changes` when the row is still at `revision` (when given); null when it is not (or gone). */
  async change (id: number, changes: SubscriptionChanges, now: Date, revision?: number): Promise<Subscription | null> {
    const set: Record<string, unknown> = { updated_at: this.ts(now) }
    if (changes.url !== undefined) set.url = changes.url
    if (changes.events !== undefined) set.events = changes.events
    if (changes.description !== undefined) set.description = changes.description
    if (changes.enabled === true) Object.assign(set, { status: 'enabled', disabled_reason: null, failures: 0 })
    if (changes.enabled === false) Object.assign(set, { status: 'disabled', disabled_reason: 'Disabled by an administrator.' })
    let q = this.q.updateTable('webhook_subscriptions').set(eb => ({ ...set, revision: eb('revision', '+', 1) })).where('id', '=', id)
    if (revision !== undefined) q = q.where('revision', '=', revision)
    const row = await q.returning('id').executeTakeFirst()
    return row === undefined ? null : await this.find(id, ADMIN)
  }

  /** The new sealed secret signs from now on; the current one too, until `now` + 24 h. */
  async rotate (id: number, sealed: string, now: Date): Promise<Subscription | null> {
    const row = await this.q.updateTable('webhook_subscriptions')
      .set(eb => ({ previous_secret: eb.ref('secret'), previous_secret_until: this.ts(new Date(now.getTime() + ROTATION_OVERLAP_MS)), secret: sealed, updated_at: this.ts(now), revision: eb('revision', '+', 1) }))
      .where('id', '=', id).returning('id').executeTakeFirst()
    return row === undefined ? null : await this.find(id, ADMIN)
  }

  async delete (id: number): Promise<boolean> {
    const r = await this.q.deleteFrom('webhook_subscriptions').where('id', '=', id).executeTakeFirst()
    return Number(r.numDeletedRows) > 0
  }

  /** Every enabled subscription (the fan-out matches each event against them). */
  async enabled (): Promise<Subscription[]> {
    return (await this.list({ filter: { status: 'enabled' } as never, sort: [{ key: 'id', direction: 'asc' }], limit: 1_000_000 }, ADMIN)).items
  }

  /** Erases previous secrets whose 24 hours after a rotation are over: a copy of the database made later holds none. */
  async forgetExpiredSecrets (now: Date): Promise<void> {
    await this.q.updateTable('webhook_subscriptions').set({ previous_secret: null, previous_secret_until: null })
      .where('previous_secret_until', '<', this.ts(now)).execute()
  }

  /**
   * Counts a delivery that ended: delivered resets the count; given up adds one, and the 20th in a
   * row disables the subscription. True when this call disabled it.
   */
  async ended (id: number, delivered: boolean, now: Date): Promise<boolean> {
    if (delivered) {
      await this.q.updateTable('webhook_subscriptions').set({ failures: 0 }).where('id', '=', id).where('failures', '>', 0).execute()
      return false
    }
    const row = await this.q.updateTable('webhook_subscriptions')
      .set(eb => ({ failures: eb('failures', '+', 1) })).where('id', '=', id).returning(['failures', 'status']).executeTakeFirst()
    if (row === undefined || row.status !== 'enabled' || Number(row.failures) < DISABLE_AFTER_FAILURES) return false
    const r = await this.q.updateTable('webhook_subscriptions')
      .set(eb => ({
        status: 'disabled',
        disabled_reason: `${DISABLE_AFTER_FAILURES} deliveries in a row failed (the last at ${now.toISOString()}); PATCH {"enabled": true} to resume.`,
        updated_at: this.ts(now),
        revision: eb('revision', '+', 1),
      }))
      .where('id', '=', id).where('status', '=', 'enabled').executeTakeFirst()
    return Number(r.numUpdatedRows) > 0
  }
}

const ADMIN: Viewer = { subject: 'system', scopes: new Set(['admin']), kind: 'jwt' }

export const webhooksStore: StoreModule = {
  name: 'webhookSubscriptions',
  migrations: { 'webhookSubscriptions/0001-webhooks': m.migration },
  repository: (db, dialect) => new SubscriptionsRepository(db, dialect),
}
