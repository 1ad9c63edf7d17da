import type { Generated, Kysely } from 'kysely'
import { isAdmin, type Viewer } from '../domain/principal.ts'
import { readPage } from './read-page.ts'
import type { ListPage, ListQuery } from './store.ts'
import { type Database, type DialectParts, fieldName, iso, type Timestamp } from './tables.ts'

/** The columns of a table whose rows belong to who made them and move between states. */
export interface OwnedColumns {
  id: Generated<number>
  owner: string
  status: string
  created_at: Timestamp
  updated_at: Timestamp
  revision: Generated<number>
}

/** Rows of a table embedded in their owner row (a parent's line items), kept in `position` order. */
export interface ChildColumns {
  parent_id: number
  position: number
}

/** The record every owned row becomes: its columns in camelCase, timestamps as ISO strings. */
export interface OwnedRecord {
  id: number
  owner: string
  status: string
  createdAt: string
  updatedAt: string
  revision: number
}

// One table of each kind, named by the caller: the columns are what this code relies on.
interface Tables { rows: OwnedColumns & Record<string, unknown>, children: ChildColumns & Record<string, unknown> }

/** What a state change found: done, no such row (for the viewer), or the row in another state or revision. */
export type MoveResult<T> =
  | { readonly outcome: 'done', readonly value: T }
  | { readonly outcome: 'missing' }
  | { readonly outcome: 'stale', readonly current: T }

export interface OwnedTable {
  readonly table: string
  /** The child table embedded as `as` (a list of its other columns), and its column naming the row. */
  readonly children?: { readonly table: string, readonly key: string, readonly as: string }
}

/** A row as its record: camelCase names; ids, revisions as numbers; timestamps as ISO strings. */
function recordOf<T> (row: Record<string, unknown>, children?: { as: string, rows: unknown[] }): T {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(row)) out[fieldName(k)] = k.endsWith('_at') && v !== null ? iso(v as Timestamp) : v
  out.id = Number(row.id)
  out.revision = Number(row.revision)
  if (children) out[children.as] = children.rows
  return out as T
}

/**
 * The reads and writes every owned resource shares, for any table with OwnedColumns: a row is
 * visible to its owner and admins; lists filter by equality on columns and page with readPage;
 * a state change is one compare-and-set on `status`; child rows are written and read with their row.
 * A resource's repository is one of these, named after its table.
 */
export class OwnedRows<T extends OwnedRecord, F extends object = Record<string, never>> {
  private readonly db: Kysely<Tables>
  private readonly children: { table: 'children', key: 'parent_id', as: string } | undefined

  constructor (db: Kysely<Database>, private readonly dialect: DialectParts, private readonly spec: OwnedTable) {
    this.db = db as unknown as Kysely<Tables>
    this.children = spec.children && { table: spec.children.table as 'children', key: spec.children.key as 'parent_id', as: spec.children.as }
  }

  private visible (viewer: Viewer, filter: object = {}) {
    let q = this.db.selectFrom(this.spec.table as 'rows')
    if (!isAdmin(viewer)) q = q.where('owner', '=', viewer?.subject ?? '')
    for (const [column, value] of Object.entries(filter)) if (value !== undefined) q = q.where(column as 'status', '=', value as string)
    return q
  }

  /** Each row's children (without their key and position), in order. */
  private async childrenOf (ids: number[]): Promise<Map<number, unknown[]>> {
    const byRow = new Map<number, unknown[]>(ids.map(id => [id, []]))
    const c = this.children
    if (c === undefined || ids.length === 0) return byRow
    const rows = await this.db.selectFrom(c.table).selectAll().where(c.key, 'in', ids).orderBy(c.key).orderBy('position').execute()
    for (const { [c.key]: parent, position: _, ...rest } of rows) byRow.get(Number(parent))!.push(rest)
    return byRow
  }

  private async withChildren (rows: Record<string, unknown>[], embed: boolean): Promise<T[]> {
    const children = embed && this.children ? await this.childrenOf(rows.map(r => Number(r.id))) : null
    return rows.map(r => recordOf<T>(r, children ? { as: this.children!.as, rows: children.get(Number(r.id))! } : undefined))
  }

  /** Inserts a row owned by `owner` in `status`, and its children (in the caller's unit of work). */
  async insert (owner: string, status: string, values: Record<string, unknown>, children: Record<string, unknown>[], now: Date): Promise<T> {
    const ts = this.dialect.timestamp(now)
    const row = await this.db.insertInto(this.spec.table as 'rows')
      .values({ ...values, owner, status, created_at: ts, updated_at: ts }).returningAll().executeTakeFirstOrThrow()
    const c = this.children
    if (c !== undefined && children.length > 0) {
      await this.db.insertInto(c.table).values(children.map((child, position) => ({ ...child, [c.key]: Number(row.id), position }))).execute()
    }
    return recordOf<T>(row, this.children && { as: this.children.as, rows: children })
  }

  /** The row with its children, if `viewer` owns it or is admin. */
  async find (id: number, viewer: Viewer): Promise<T | null> {
    const row = await this.visible(viewer).selectAll().where('id', '=', id).executeTakeFirst()
    return row ? (await this.withChildren([row], true))[0]! : null
  }

  /** `viewer`'s rows (admin: all) matching `query.filter`, with their children when `embed`. */
  async list (query: ListQuery<string, F>, viewer: Viewer, embed = false): Promise<ListPage<T>> {
    const count = async () => Number((await this.visible(viewer, query.filter).select(eb => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n)
    const page = await readPage(this.visible(viewer, query.filter).selectAll(), query, key => `${this.spec.table}.${key}`, count)
    return { ...page, items: await this.withChildren(page.items, embed) }
  }

  /**
   * Moves the row from one of `from` to `to` in one statement, when it is still at `revision` if
   * given; `stale`, with the row as it is, when it is in another state or at another revision.
   */
  async move (id: number, viewer: Viewer, from: readonly string[], to: string, now: Date, revision?: number): Promise<MoveResult<T>> {
    let q = this.db.updateTable(this.spec.table as 'rows').set(eb => ({ status: to, updated_at: this.dialect.timestamp(now), revision: eb('revision', '+', 1) }))
      .where('id', '=', id).where('status', 'in', [...from])
    if (revision !== undefined) q = q.where('revision', '=', revision)
    if (!isAdmin(viewer)) q = q.where('owner', '=', viewer?.subject ?? '')
    const row = await q.returningAll().executeTakeFirst()
    if (row) return { outcome: 'done', value: (await this.withChildren([row], true))[0]! }
    const current = await this.find(id, viewer)
    return current ? { outcome: 'stale', current } : { outcome: 'missing' }
  }
}
