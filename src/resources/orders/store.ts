import type { ChildColumns, OwnedColumns, OwnedRecord } from '../../store/owned-rows.ts'
import { OwnedRows } from '../../store/owned-rows.ts'
import type { StoreModule } from '../../store/module.ts'
import * as m0003 from './0003-orders.ts'

export const ORDER_STATUSES = ['PROCESSING', 'CANCELLED'] as const
export type OrderStatus = typeof ORDER_STATUSES[number]
export interface OrderItem { sku: string, quantity: number }
/** An order as the store keeps it; `items` only when read with them. */
export interface Order extends OwnedRecord { status: OrderStatus, customerEmail: string, items?: OrderItem[] }
export type OrdersRepository = OwnedRows<Order, { status?: OrderStatus }>

declare module '../../store/tables.ts' {
  interface Database {
    orders: OwnedColumns & { status: OrderStatus, customer_email: string }
    order_items: Omit<ChildColumns, 'parent_id'> & { order_id: number, sku: string, quantity: number }
  }
}
declare module '../../store/store.ts' { interface Repositories { readonly orders: OrdersRepository } }

export const ordersStore: StoreModule = {
  name: 'orders',
  migrations: { '0003-orders': m0003.migration },
  repository: (db, dialect): OrdersRepository => new OwnedRows(db, dialect, { table: 'orders', children: { table: 'order_items', key: 'order_id', as: 'items' } }),
}
