import type { Kysely, Selectable } from 'kysely'
import type { Order, OrderInput, OrderItem, OrderSortKey, OrderStatus } from '../../domain/order.ts'
import { isAdmin, type Viewer } from '../../domain/principal.ts'
import { readPage } from '../read-page.ts'
import type { ListPage, ListQuery, OrderFilter, OrderStore, WriteResult } from '../store.ts'
import { type Database, type DialectParts, iso, type OrdersTable } from '../tables.ts'

function toOrder (row: Selectable<OrdersTable>, items?: OrderItem[]): Order {
  const { id, owner, customer_email: customerEmail, status, created_at: c, updated_at: u, revision } = row
  return { id: Number(id), owner, customerEmail, status, ...(items ? { items } : {}), createdAt: iso(c), updatedAt: iso(u), revision: Number(revision) }
}

/** The orders and order_items tables: an order and its items are written and read together. */
export class OrdersRepository implements OrderStore {
  constructor (private readonly db: Kysely<Database>, private readonly dialect: DialectParts) {}

  private visible (viewer: Viewer, filter: OrderFilter = {}) {
    let q = this.db.selectFrom('orders')
    if (!isAdmin(viewer)) q = q.where('owner', '=', viewer?.subject ?? '')
    return filter.status === undefined ? q : q.where('status', '=', filter.status)
  }

  private async itemsOf (ids: number[]): Promise<Map<number, OrderItem[]>> {
    const byOrder = new Map<number, OrderItem[]>(ids.map(id => [id, []]))
    if (ids.length === 0) return byOrder
    const rows = await this.db.selectFrom('order_items').selectAll().where('order_id', 'in', ids).orderBy('order_id').orderBy('position').execute()
    for (const r of rows) byOrder.get(Number(r.order_id))!.push({ sku: r.sku, quantity: Number(r.quantity) })
    return byOrder
  }

  async create (input: OrderInput, owner: string, now: Date): Promise<Order> {
    const ts = this.dialect.timestamp(now)
    const row = await this.db.insertInto('orders')
      .values({ owner, customer_email: input.customerEmail, status: 'PROCESSING', created_at: ts, updated_at: ts, revision: 1 })
      .returningAll().executeTakeFirstOrThrow()
    const items = input.items.map((it, position) => ({ order_id: Number(row.id), position, sku: it.sku, quantity: it.quantity }))
    await this.db.insertInto('order_items').values(items).execute()
    return toOrder(row, input.items)
  }

  async findById (id: number, viewer: Viewer): Promise<Order | null> {
    const row = await this.visible(viewer).selectAll().where('id', '=', id).executeTakeFirst()
    return row ? toOrder(row, (await this.itemsOf([id])).get(id)) : null
  }

  async list (query: ListQuery<OrderSortKey, OrderFilter>, viewer: Viewer, withItems: boolean): Promise<ListPage<Order>> {
    const count = async () => Number((await this.visible(viewer, query.filter).select(eb => eb.fn.countAll<number>().as('n')).executeTakeFirstOrThrow()).n)
    const page = await readPage(this.visible(viewer, query.filter).selectAll(), query, key => `orders.${key}`, count)
    const items = withItems ? await this.itemsOf(page.items.map(r => Number(r.id))) : null
    return { ...page, items: page.items.map(r => toOrder(r, items?.get(Number(r.id)))) }
  }

  async move (id: number, viewer: Viewer, from: readonly OrderStatus[], to: OrderStatus, now: Date): Promise<WriteResult<Order>> {
    let q = this.db.updateTable('orders').set(eb => ({ status: to, updated_at: this.dialect.timestamp(now), revision: eb('revision', '+', 1) }))
      .where('id', '=', id).where('status', 'in', [...from])
    if (!isAdmin(viewer)) q = q.where('owner', '=', viewer?.subject ?? '')
    const row = await q.returningAll().executeTakeFirst()
    if (row) return { outcome: 'done', value: toOrder(row, (await this.itemsOf([id])).get(id)) }
    return (await this.findById(id, viewer)) ? { outcome: 'stale' } : { outcome: 'missing' }
  }
}
