import { type Kysely, type Selectable, sql } from 'kysely'
import { readPage } from '../read-page.ts'
import type { ListPage, ListQuery, NewDelivery, WebhookDelivery, WebhookStore } from '../store.ts'
import { type Database, type DialectParts, iso, type WebhookDeliveriesTable } from '../tables.ts'

function deliveryOf (r: Selectable<WebhookDeliveriesTable>): WebhookDelivery {
  const num = (v: number | null) => v === null ? null : Number(v)
  return {
    id: r.id,
    exportId: num(r.export_id),
    webhookId: num(r.webhook_id),
    eventId: num(r.event_id),
    eventType: r.event_type,
    url: r.url,
    payload: r.payload,
    state: r.state,
    attempts: Number(r.attempts),
    lastStatusCode: num(r.last_status_code),
    lastError: r.last_error,
    nextAttemptAt: r.state === 'pending' ? iso(r.next_attempt_at) : null,
    createdAt: iso(r.created_at),
    deliveredAt: r.delivered_at === null ? null : iso(r.delivered_at),
  }
}

/** The webhook_deliveries table: an outbox of webhooks, each with its attempts and next due time. */
export class WebhooksRepository implements WebhookStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  async enqueue (d: NewDelivery, now: Date): Promise<void> {
    const ts = this.dialect.timestamp(now)
    await this.db.insertInto('webhook_deliveries')
      .values({
        id: d.id,
        export_id: d.exportId ?? null,
        webhook_id: d.webhookId ?? null,
        event_id: d.eventId ?? null,
        event_type: d.eventType ?? null,
        url: d.url,
        payload: d.payload,
        state: 'pending',
        next_attempt_at: ts,
        lease_until: null,
        last_error: null,
        last_status_code: null,
        delivered_at: null,
        created_at: ts,
        updated_at: ts,
      })
      .execute()
  }

  async claimDue (now: Date, leaseMs: number, limit: number): Promise<WebhookDelivery[]> {
    const ts = this.dialect.timestamp(now)
    const rows = await this.db.updateTable('webhook_deliveries')
      .set(eb => ({ lease_until: this.dialect.timestamp(new Date(now.getTime() + leaseMs)), attempts: eb('attempts', '+', 1), updated_at: ts }))
      .where('id', 'in', eb => {
        let due = eb.selectFrom('webhook_deliveries as d').select('d.id')
          .where('d.state', '=', 'pending')
          .where('d.next_attempt_at', '<=', ts)
          .where(w => w.or([w('d.lease_until', 'is', null), w('d.lease_until', '<', ts)]))
          // Started in event order per subscription: not while an earlier one waits for its first
          // attempt (a claim in flight elsewhere has not committed its attempt yet, so it counts).
          .where(w => w.or([
            w('d.webhook_id', 'is', null),
            w.not(w.exists(w.selectFrom('webhook_deliveries as e').select(sql.lit(1).as('one'))
              .whereRef('e.webhook_id', '=', 'd.webhook_id')
              .where('e.state', '=', 'pending')
              .where('e.attempts', '=', 0)
              .where(x => x.or([
                x('e.event_id', '<', x.ref('d.event_id')),
                x.and([x('e.event_id', '=', x.ref('d.event_id')), x('e.created_at', '<', x.ref('d.created_at'))]),
              ])))),
          ]))
          .orderBy('d.next_attempt_at')
          .limit(limit)
        if (this.dialect.skipLocked) due = due.forUpdate().skipLocked()
        return due
      })
      .returningAll()
      .execute()
    // Started in the order of their events.
    return rows.map(deliveryOf).sort((a, b) => (a.eventId ?? 0) - (b.eventId ?? 0))
  }

  async delivered (id: string, now: Date, statusCode?: number): Promise<void> {
    const ts = this.dialect.timestamp(now)
    await this.db.updateTable('webhook_deliveries')
      .set({ state: 'delivered', lease_until: null, last_error: null, last_status_code: statusCode ?? null, delivered_at: ts, updated_at: ts })
      .where('id', '=', id)
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

  async deleteByWebhook (webhookId: number): Promise<void> {
    await this.db.deleteFrom('webhook_deliveries').where('webhook_id', '=', webhookId).execute()
  }

  async failPending (webhookId: number, reason: string, now: Date): Promise<void> {
    await this.db.updateTable('webhook_deliveries')
      .set({ state: 'failed', lease_until: null, last_error: reason, updated_at: this.dialect.timestamp(now) })
      .where('webhook_id', '=', webhookId).where('state', '=', 'pending')
      .execute()
  }

  async backlog (): Promise<{ pending: number, oldestCreatedAt: string | null }> {
    const row = await this.db.selectFrom('webhook_deliveries')
      .select(eb => [eb.fn.countAll<number>().as('n'), eb.fn.min('created_at').as('oldest')])
      .where('state', '=', 'pending')
      .executeTakeFirstOrThrow()
    return { pending: Number(row.n), oldestCreatedAt: row.oldest === null ? null : iso(row.oldest) }
  }

  async deleteFinishedBefore (cutoff: Date): Promise<number> {
    const r = await this.db.deleteFrom('webhook_deliveries')
      .where('state', '!=', 'pending').where('updated_at', '<', this.dialect.timestamp(cutoff))
      .executeTakeFirst()
    return Number(r.numDeletedRows)
  }
}
