import type { Kysely } from 'kysely'
import type { WebhookDelivery, WebhookStore } from '../store.ts'
import { type Database, type DialectParts, iso } from '../tables.ts'

/** The webhook_deliveries table: an outbox of webhooks, each with its attempts and next due time. */
export class WebhooksRepository implements WebhookStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  async enqueue (delivery: { id: string, exportId: number | null, url: string, payload: string }, now: Date): Promise<void> {
    const ts = this.dialect.timestamp(now)
    await this.db.insertInto('webhook_deliveries')
      .values({
        id: delivery.id,
        export_id: delivery.exportId,
        url: delivery.url,
        payload: delivery.payload,
        state: 'pending',
        next_attempt_at: ts,
        lease_until: null,
        last_error: null,
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
        let due = eb.selectFrom('webhook_deliveries').select('id')
          .where('state', '=', 'pending')
          .where('next_attempt_at', '<=', ts)
          .where(w => w.or([w('lease_until', 'is', null), w('lease_until', '<', ts)]))
          .orderBy('next_attempt_at')
          .limit(limit)
        if (this.dialect.skipLocked) due = due.forUpdate().skipLocked()
        return due
      })
      .returningAll()
      .execute()
    return rows.map(r => ({ id: r.id, exportId: r.export_id === null ? null : Number(r.export_id), url: r.url, payload: r.payload, attempts: Number(r.attempts), createdAt: iso(r.created_at) }))
  }

  async delivered (id: string, now: Date): Promise<void> {
    await this.db.updateTable('webhook_deliveries')
      .set({ state: 'delivered', lease_until: null, last_error: null, updated_at: this.dialect.timestamp(now) })
      .where('id', '=', id)
      .execute()
  }

  async failedAttempt (id: string, error: string, at: Date | null, now: Date): Promise<void> {
    const ts = this.dialect.timestamp(now)
    await this.db.updateTable('webhook_deliveries')
      .set(at === null
        ? { state: 'failed', lease_until: null, last_error: error, updated_at: ts }
        : { next_attempt_at: this.dialect.timestamp(at), lease_until: null, last_error: error, updated_at: ts })
      .where('id', '=', id)
      .execute()
  }
}
