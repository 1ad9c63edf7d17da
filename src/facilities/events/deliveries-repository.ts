import { type ExpressionBuilder, type Kysely, type Selectable, sql } from 'kysely'
import { readPage } from '../../store/read-page.ts'
import type { ListPage, ListQuery } from '../../store/store.ts'
import { type Database, type DialectParts, iso, type Timestamp } from '../../store/tables.ts'
import { eventJson } from './events.ts'
import type { NewDelivery, WebhookDeliveriesTable, WebhookDelivery, WebhookStore } from './store.ts'

function deliveryOf (r: Selectable<WebhookDeliveriesTable>): WebhookDelivery {
  const num = (v: number | null) => v === null ? null : Number(v)
  return {
    id: r.id,
    exportId: num(r.export_id),
    webhookId: num(r.webhook_id),
    eventId: num(r.event_id),
    eventType: r.event_type,
    url: r.url,
    // Stored as '' when the body is the event's (the column is NOT NULL since it first shipped).
    payload: r.payload === '' ? null : r.payload,
    state: r.state,
    attempts: Number(r.attempts),
    lastStatusCode: num(r.last_status_code),
    lastError: r.last_error,
    nextAttemptAt: r.state === 'pending' ? iso(r.next_attempt_at) : null,
    createdAt: iso(r.created_at),
    deliveredAt: r.delivered_at === null ? null : iso(r.delivered_at),
  }
}

/**
 * The two queues of pending deliveries, each the predicate of its partial index (migration
 * core/0003), word for word and as literals so that both planners match it: first attempts of
 * subscription deliveries, which start in event order per subscription; and deliveries free to go
 * in any order once due (export callbacks, and retries: a first attempt started them). Together
 * they are every pending delivery.
 */
const FIRST_ATTEMPTS = sql<boolean>`state = 'pending' AND attempts = 0 AND webhook_id IS NOT NULL`
const FREE = sql<boolean>`state = 'pending' AND (webhook_id IS NULL OR attempts > 0)`

/**
 * No sender holds the delivery at `ts`: never claimed, or its lease ran out. What a claim may take;
 * a pending delivery that is not so is held, its attempt perhaps in flight.
 */
const unleased = (ts: Timestamp) => (w: ExpressionBuilder<Database, 'webhook_deliveries'>) =>
  w.or([w('lease_until', 'is', null), w('lease_until', '<', ts)])

/** The webhook_deliveries table: an outbox of webhooks, each with its attempts and next due time. */
export class WebhooksRepository implements WebhookStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  async enqueue (d: NewDelivery, now: Date): Promise<void> {
    await this.enqueueAll([d], now)
  }

  async enqueueAll (deliveries: readonly NewDelivery[], now: Date): Promise<void> {
    const ts = this.dialect.timestamp(now)
    // A hundred rows a statement: one statement's cost shared, well within either store's limit of parameters.
    for (let i = 0; i < deliveries.length; i += 100) {
      await this.db.insertInto('webhook_deliveries')
        .values(deliveries.slice(i, i + 100).map(d => ({
          id: d.id,
          export_id: d.exportId ?? null,
          webhook_id: d.webhookId ?? null,
          event_id: d.eventId ?? null,
          event_type: d.eventType ?? null,
          url: d.url,
          payload: d.payload ?? '',
          state: 'pending',
          next_attempt_at: ts,
          lease_until: null,
          last_error: null,
          last_status_code: null,
          delivered_at: null,
          created_at: ts,
          updated_at: ts,
        })))
        .execute()
    }
  }

  async claimDue (now: Date, leaseMs: number, limit: number): Promise<WebhookDelivery[]> {
    const ts = this.dialect.timestamp(now)
    let free = this.db.selectFrom('webhook_deliveries').select('id')
      .where(FREE)
      .where('next_attempt_at', '<=', ts)
      .where(unleased(ts))
      .orderBy('next_attempt_at')
      .limit(limit)
    if (this.dialect.skipLocked) free = free.forUpdate().skipLocked()
    const ids = (await free.execute()).map(r => r.id)
    if (ids.length < limit) ids.push(...await this.firstAttempts(limit - ids.length))
    if (ids.length === 0) return []
    // Checked again as the rows are taken: on PostgreSQL another instance's claim of the same rows
    // may have committed meanwhile (its lease is then set, and the row is left to it). First
    // attempts are not skipped when locked: a later one must not start before an earlier one's claim.
    const rows = await this.db.updateTable('webhook_deliveries')
      .set(eb => ({ lease_until: this.dialect.timestamp(new Date(now.getTime() + leaseMs)), attempts: eb('attempts', '+', 1), updated_at: ts }))
      .where('id', 'in', ids)
      .where('state', '=', 'pending')
      .where(unleased(ts))
      .returningAll()
      .execute()
    // Started in the order of their events.
    const claimed = rows.map(deliveryOf).sort((a, b) => (a.eventId ?? 0) - (b.eventId ?? 0))
    return await this.withBodies(claimed)
  }

  /** Subscription deliveries get their events' bodies, read in one query. */
  private async withBodies (deliveries: WebhookDelivery[]): Promise<WebhookDelivery[]> {
    const wanted = [...new Set(deliveries.filter(d => d.payload === null && d.eventId !== null).map(d => d.eventId!))]
    if (wanted.length === 0) return deliveries
    const events = await this.db.selectFrom('events').select(['id', 'type', 'occurred_at', 'data', 'actor']).where('id', 'in', wanted).execute()
    const bodies = new Map(events.map(e => [Number(e.id), eventJson({ id: Number(e.id), type: e.type, occurredAt: iso(e.occurred_at), data: e.data, actor: e.actor })]))
    return deliveries.map(d => d.payload === null && d.eventId !== null ? { ...d, payload: bodies.get(d.eventId) ?? null } : d)
  }

  /**
   * Up to `limit` first attempts, each subscription's earliest (a prefix of its queue in event
   * order), the subscriptions taking turns. Every read is a seek in the first-attempt index: the
   * subscriptions with a queue by a loose index scan, then each one's head.
   */
  private async firstAttempts (limit: number): Promise<string[]> {
    const { rows } = await sql<{ w: number }>`
      WITH RECURSIVE queues(w) AS (
        SELECT min(webhook_id) FROM webhook_deliveries WHERE ${FIRST_ATTEMPTS}
        UNION ALL
        SELECT (SELECT min(webhook_id) FROM webhook_deliveries WHERE ${FIRST_ATTEMPTS} AND webhook_id > queues.w)
        FROM queues WHERE queues.w IS NOT NULL
      )
      SELECT w FROM queues WHERE w IS NOT NULL`.execute(this.db)
    if (rows.length === 0) return []
    // More subscriptions with a queue than a claim takes: start at a random one, so none waits long.
    const start = rows.length > limit ? Math.floor(Math.random() * rows.length) : 0
    const subscriptions = [...rows.slice(start), ...rows.slice(0, start)].slice(0, limit).map(r => Number(r.w))
    // Each one's share of the claim: about `limit` rows read in all, however many subscriptions.
    const share = Math.ceil(limit / subscriptions.length)
    const head = (webhookId: number) => this.db.selectFrom('webhook_deliveries').select(['id', 'webhook_id', 'event_id', 'created_at'])
      .where(FIRST_ATTEMPTS).where('webhook_id', '=', webhookId)
      .orderBy('event_id').orderBy('created_at').limit(share)
    const [one, ...more] = subscriptions.map((w, i) => this.db.selectFrom(head(w).as(`q${i}`)).selectAll())
    const heads = (await more.reduce((q, next) => q.unionAll(next), one!).execute())
      .map(h => ({ id: h.id, webhook_id: Number(h.webhook_id), event_id: Number(h.event_id), created_at: iso(h.created_at) }))
      .sort((a, b) => a.webhook_id - b.webhook_id || a.event_id - b.event_id || (a.created_at < b.created_at ? -1 : a.created_at > b.created_at ? 1 : 0))
    // Turn by turn: every subscription's first, then every one's second, …
    const turn = new Map<string, number>()
    const seen = new Map<number, number>()
    for (const h of heads) {
      const n = (seen.get(h.webhook_id) ?? 0) + 1
      seen.set(h.webhook_id, n)
      turn.set(h.id, n)
    }
    return heads.map(h => h.id).sort((a, b) => turn.get(a)! - turn.get(b)!).slice(0, limit)
  }

  async delivered (ids: readonly string[], now: Date, statusCode?: number): Promise<void> {
    if (ids.length === 0) return
    const ts = this.dialect.timestamp(now)
    await this.db.updateTable('webhook_deliveries')
      .set({ state: 'delivered', lease_until: null, last_error: null, last_status_code: statusCode ?? null, delivered_at: ts, updated_at: ts })
      .where('id', 'in', ids)
      .execute()
  }

  async failedAttempt (id: string, error: string, at: Date | null, now: Date, statusCode: number | null = null): Promise<void> {
    const ts = this.dialect.timestamp(now)
    await this.db.updateTable('webhook_deliveries')
      .set(at === null
        ? { state: 'failed', lease_until: null, last_error: error, last_status_code: statusCode, updated_at: ts }
        : { next_attempt_at: this.dialect.timestamp(at), lease_until: null, last_error: error, last_status_code: statusCode, updated_at: ts })
      .where('id', '=', id)
      .execute()
  }

  /** An attempt cut by the sender's stop: due again at once, and not counted (its claim counted it). */
  async handBack (id: string, error: string, now: Date): Promise<void> {
    const ts = this.dialect.timestamp(now)
    await this.db.updateTable('webhook_deliveries')
      .set(eb => ({ lease_until: null, attempts: eb('attempts', '-', 1), last_error: error, updated_at: ts }))
      .where('id', '=', id)
      .where('state', '=', 'pending')
      .execute()
  }

  async findById (id: string): Promise<WebhookDelivery | null> {
    const row = await this.db.selectFrom('webhook_deliveries').selectAll().where('id', '=', id).executeTakeFirst()
    return row === undefined ? null : deliveryOf(row)
  }

  async listByWebhook (webhookId: number, query: ListQuery<'created_at', Record<string, never>>): Promise<ListPage<WebhookDelivery>> {
    const base = () => this.db.selectFrom('webhook_deliveries').where('webhook_id', '=', webhookId)
    const count = async () => Number((await base().select(eb => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n)
    const page = await readPage(base().selectAll(), query, key => `webhook_deliveries.${key}`, count)
    return { ...page, items: page.items.map(deliveryOf) }
  }

  async deleteByWebhook (webhookId: number, now: Date): Promise<void> {
    const ts = this.dialect.timestamp(now)
    await this.db.deleteFrom('webhook_deliveries').where('webhook_id', '=', webhookId)
      .where(w => w.or([w('state', '<>', 'pending'), unleased(ts)(w)]))
      .execute()
  }

  async heldByWebhook (webhookId: number, now: Date): Promise<number> {
    const ts = this.dialect.timestamp(now)
    const row = await this.db.selectFrom('webhook_deliveries').select(eb => eb.fn.countAll<number>().as('n'))
      .where('webhook_id', '=', webhookId).where('state', '=', 'pending').where(w => w.not(unleased(ts)(w)))
      .executeTakeFirstOrThrow()
    return Number(row.n)
  }

  async failPending (webhookId: number, reason: string, now: Date): Promise<void> {
    await this.db.updateTable('webhook_deliveries')
      .set({ state: 'failed', lease_until: null, last_error: reason, updated_at: this.dialect.timestamp(now) })
      .where('webhook_id', '=', webhookId).where('state', '=', 'pending')
      .execute()
  }

  async backlog (): Promise<{ pending: number, oldestCreatedAt: string | null }> {
    // Every pending delivery is in one of the two queues: each read from its own index.
    const queue = (where: typeof FREE) => this.db.selectFrom('webhook_deliveries')
      .select(eb => [eb.fn.countAll<number>().as('n'), eb.fn.min('created_at').as('oldest')])
      .where(where)
      .executeTakeFirstOrThrow()
    const rows = [await queue(FIRST_ATTEMPTS), await queue(FREE)]
    const oldest = rows.map(r => r.oldest).filter(o => o !== null).map(iso).sort()[0] ?? null
    return { pending: rows.reduce((n, r) => n + Number(r.n), 0), oldestCreatedAt: oldest }
  }

  async oldestEventHeld (): Promise<number | null> {
    const row = await this.db.selectFrom('webhook_deliveries').select(eb => eb.fn.min('event_id').as('oldest'))
      .where('event_id', 'is not', null).executeTakeFirst()
    return row?.oldest === null || row?.oldest === undefined ? null : Number(row.oldest)
  }

  async deleteFinishedBefore (cutoff: Date): Promise<number> {
    const r = await this.db.deleteFrom('webhook_deliveries')
      .where(sql<boolean>`state <> 'pending'`).where('updated_at', '<', this.dialect.timestamp(cutoff))
      .executeTakeFirst()
    return Number(r.numDeletedRows)
  }
}
