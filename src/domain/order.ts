import { AppError } from '../errors.ts'
import type { ListPage, ListQuery, OrderFilter, OrderStore } from '../store/store.ts'
import type { Principal, Viewer } from './principal.ts'

export const ORDER_STATUSES = ['PROCESSING', 'CANCELLED'] as const
export type OrderStatus = typeof ORDER_STATUSES[number]
export const ORDER_SORT_KEYS = ['id', 'created_at'] as const
export type OrderSortKey = typeof ORDER_SORT_KEYS[number]

export interface OrderItem { sku: string, quantity: number }
export interface OrderInput { customerEmail: string, items: OrderItem[] }

/** An order as the store keeps it; `items` are read only when asked for (lists without include=items). */
export interface Order {
  id: number
  owner: string
  customerEmail: string
  status: OrderStatus
  items?: OrderItem[]
  createdAt: string
  updatedAt: string
  revision: number
}

/** The state machine, one row per action: the states it may start from, and where it leads. */
export const ORDER_MOVES = {
  cancel: { from: ['PROCESSING'], to: 'CANCELLED', refused: 'ORDER_NOT_CANCELLABLE' },
} as const satisfies Record<string, { from: readonly OrderStatus[], to: OrderStatus, refused: 'ORDER_NOT_CANCELLABLE' }>
export type OrderAction = keyof typeof ORDER_MOVES

/** The actions an order in `status` allows (its `_links`). */
export function allowedActions (status: OrderStatus): OrderAction[] {
  return (Object.keys(ORDER_MOVES) as OrderAction[]).filter(a => (ORDER_MOVES[a].from as readonly string[]).includes(status))
}

const notFound = (id: number) => new AppError('ORDER_NOT_FOUND', `No order ${id} exists, or it is not yours.`)

/** The rules of orders: they belong to their creator (admins see all); moves follow ORDER_MOVES atomically. */
export class OrderService {
  constructor (private readonly store: OrderStore, private readonly clock: () => Date = () => new Date()) {}

  async create (input: OrderInput, owner: Principal): Promise<Order> {
    return await this.store.create(input, owner.subject, this.clock())
  }

  async get (id: number, viewer: Viewer): Promise<Order> {
    return await this.store.findById(id, viewer) ?? (() => { throw notFound(id) })()
  }

  async list (query: ListQuery<OrderSortKey, OrderFilter>, viewer: Viewer, withItems: boolean): Promise<ListPage<Order>> {
    return await this.store.list(query, viewer, withItems)
  }

  /** Applies `action` as one compare-and-set on the status: of two racing cancels, one wins. */
  async act (id: number, viewer: Principal, action: OrderAction): Promise<Order> {
    const move = ORDER_MOVES[action]
    const r = await this.store.move(id, viewer, move.from, move.to, this.clock())
    if (r.outcome === 'missing') throw notFound(id)
    if (r.outcome === 'stale') throw new AppError(move.refused, `Order ${id} is not ${move.from.join(' or ')}; it cannot be ${move.to.toLowerCase()}.`)
    return r.value
  }
}
