import { type Kysely, type Selectable, sql } from 'kysely'
import { arg, preparedQueries } from '../../store/prepared.ts'
import { type Database, type DialectParts, iso } from '../../store/tables.ts'
import type { Actor } from '../../domain/principal.ts'
import type { EventInput, EventStore, StoredEvent } from '../../store/store.ts'
import type { EventsTable } from './store.ts'

/** An event row without its data. */
function headOf (r: Pick<Selectable<EventsTable>, 'id' | 'type' | 'occurred_at' | 'owner' | 'public' | 'webhook_id'>): Omit<StoredEvent, 'data' | 'actor'> {
  return {
    id: Number(r.id),
    type: r.type,
    occurredAt: iso(r.occurred_at),
    owner: r.owner,
    public: Number(r.public) === 1,
    webhookId: r.webhook_id === null ? null : Number(r.webhook_id),
  }
}

const FANNED_OUT = 'events_fanned_out'
const PRUNED_THROUGH = 'events_pruned_through'

/**
 * The events table: an outbox written in the unit of work of each change. Ids
 * follow commit order (see DialectParts.eventsLock), so a reader that remembers the last id it
 * saw and asks for what follows never misses an event that committed late.
 */
export class EventsRepository implements EventStore {
  /**
   * `pending` is the unit of work's list of events to write once its own work is done (null outside
   * a unit of work): writing them last keeps the ordering lock for the commit alone.
   */
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts, private readonly pending: EventInput[] | null = null, private readonly actor: Actor | null = null) {}

  private flushed = 0

  get written (): number {
    return this.flushed
  }

  record (...events: EventInput[]): void {
    if (this.pending === null) throw new Error('events are recorded in a unit of work (store.transaction), with the change they announce')
    this.pending.push(...events)
  }

  /** Writes the unit's recorded events, as its last statements (KyselyStore.transaction). */
  async flush (now: Date): Promise<void> {
    if (this.pending === null || this.pending.length === 0) return
    if (this.dialect.eventsLock !== null) await sql.raw(this.dialect.eventsLock).execute(this.db)
    const ts = this.dialect.timestamp(now)
    // One shape per count of events (a change records one or a few): compiled once, then only bound.
    const n = this.pending.length
    // Made once per unit that records events, not per unit.
    const actor = this.actor === null ? null : JSON.stringify(this.actor)
    const insert = preparedQueries(this.dialect).get(`events|flush|${n}`, () => this.db.insertInto('events').values(Array.from({ length: n }, (_, i) => ({
      type: arg<string>(7 * i),
      occurred_at: arg<string>(7 * i + 1),
      owner: arg<string | null>(7 * i + 2),
      public: arg<number>(7 * i + 3),
      webhook_id: arg<number | null>(7 * i + 4),
      data: arg<string>(7 * i + 5),
      actor: arg<string | null>(7 * i + 6),
    }))))
    await insert.execute(this.db, this.pending.flatMap(e => [e.type, ts, e.owner, e.public ? 1 : 0, e.webhookId ?? null, JSON.stringify(e.data), actor]))
    this.flushed += n
    this.pending.length = 0
  }

  async list (after: number, limit: number): Promise<StoredEvent[]> {
    const rows = await this.db.selectFrom('events').selectAll().where('id', '>', after).orderBy('id').limit(limit).execute()
    return rows.map(r => ({ ...headOf(r), data: r.data, actor: r.actor }))
  }

  async heads (after: number, limit: number): Promise<Array<Omit<StoredEvent, 'data' | 'actor'>>> {
    const rows = await this.db.selectFrom('events').select(['id', 'type', 'occurred_at', 'owner', 'public', 'webhook_id'])
      .where('id', '>', after).orderBy('id').limit(limit).execute()
    return rows.map(headOf)
  }

  async lastId (): Promise<number> {
    const row = await this.db.selectFrom('events').select(eb => eb.fn.max('id').as('id')).executeTakeFirst()
    return Number(row?.id ?? 0)
  }

  async prunedThrough (): Promise<number> {
    return await this.meta(PRUNED_THROUGH)
  }

  async prune (cutoff: Date, upTo: number): Promise<number> {
    const gone = await this.db.deleteFrom('events')
      .where('occurred_at', '<', this.dialect.timestamp(cutoff)).where('id', '<=', upTo)
      .returning('id').execute()
    if (gone.length === 0) return 0
    const through = Math.max(...gone.map(r => Number(r.id)))
    await this.db.updateTable('meta').set({ value: String(through) })
      .where('key', '=', PRUNED_THROUGH).where(sql`CAST(value AS BIGINT)`, '<', through).execute()
    return gone.length
  }

  async claimFanOut (): Promise<number | null> {
    let q = this.db.selectFrom('meta').select('value').where('key', '=', FANNED_OUT)
    if (this.dialect.skipLocked) q = q.forUpdate().skipLocked()
    const row = await q.executeTakeFirst()
    return row === undefined ? null : Number(row.value)
  }

  async fannedOut (through: number): Promise<void> {
    await this.db.updateTable('meta').set({ value: String(through) }).where('key', '=', FANNED_OUT).execute()
  }

  async untargetedThrough (after: number, limit: number): Promise<number | null> {
    const row = await preparedQueries(this.dialect).get('events|untargeted-through', () => this.db
      .selectFrom(eb => eb.selectFrom('events').select(['id', 'webhook_id']).where('id', '>', arg<number>(0)).orderBy('id').limit(arg<number>(1)).as('next'))
      .select(eb => [eb.fn.max('next.id').as('last'), eb.fn.count('next.webhook_id').as('targeted')]))
      .execute(this.db, [after, limit])
    if (Number(row[0]?.targeted ?? 0) > 0) return null
    return row[0]?.last === null || row[0]?.last === undefined ? after : Number(row[0].last)
  }

  async fanOutPosition (): Promise<number> {
    return await this.meta(FANNED_OUT)
  }

  private async meta (key: string): Promise<number> {
    const row = await this.db.selectFrom('meta').select('value').where('key', '=', key).executeTakeFirst()
    return Number(row?.value ?? 0)
  }
}
