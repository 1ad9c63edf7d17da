import { type Static, Type } from '@sinclair/typebox'
import { type CollectionSpec, pagingQueryProperties } from '../../http/toolkit/paging.ts'
import { LinkSchema, versionedSchemas } from '../../http/contract/schemas.ts'
import { ORDER_STATUSES } from './store.ts'

export const OrderIdParamsSchema = Type.Object({ order_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, format: 'int64' }) }, { additionalProperties: false })
export type OrderIdParams = Static<typeof OrderIdParamsSchema>

const StatusSchema = Type.Unsafe<typeof ORDER_STATUSES[number]>({ type: 'string', enum: [...ORDER_STATUSES], description: 'PROCESSING → CANCELLED by the cancel action.' })
export const OrderItemSchema = Type.Object({
  sku: Type.String({ minLength: 1, maxLength: 64, pattern: '\\S', 'x-error-code': 'INVALID_FORMAT', description: '1–64 characters, not all white space (else INVALID_FORMAT).' }),
  quantity: Type.Integer({ minimum: 1, maximum: 1_000_000, format: 'int32' }),
}, { $id: 'OrderItem', additionalProperties: false })

const ItemsSchema = Type.Array(Type.Ref(OrderItemSchema), { minItems: 1, maxItems: 100 })
const fields = {
  status: StatusSchema,
  customer_email: Type.String({ format: 'email', maxLength: 254 }),
  items: ItemsSchema,
  created_at: Type.String({ format: 'date-time', maxLength: 30, description: 'RFC 3339, UTC, millisecond precision.' }),
}
const OrderLinksSchema = Type.Object({ self: Type.Ref(LinkSchema), items: Type.Ref(LinkSchema), cancel: Type.Optional(Type.Ref(LinkSchema)) }, { additionalProperties: false })

/** The order: `id` (v1) or `orderId` (v2), with `_links` in both. */
export const [OrderV1Schema, OrderV2Schema] = versionedSchemas('Order', 'order', { ...fields, _links: OrderLinksSchema })
/** A list item: every field but items, unless `include=items`; exactly `fields` when given; always `_links.self`. */
export const [OrderListItemV1Schema, OrderListItemV2Schema] = versionedSchemas('OrderListItem', 'order', {
  ...fields,
  _links: Type.Object({ self: Type.Ref(LinkSchema) }, { additionalProperties: false }),
}, { partial: true })

export const CreateOrderBodySchema = Type.Object({
  customer_email: fields.customer_email,
  items: ItemsSchema,
}, { $id: 'CreateOrderBody', additionalProperties: false })
export type CreateOrderBody = Static<typeof CreateOrderBodySchema>

export type OrderSortKey = 'id' | 'created_at'
export const ORDERS: CollectionSpec<OrderSortKey> = { name: 'orders', sortKeys: ['id', 'created_at'], defaultSort: '-created_at', includes: ['items'] }
export const ORDER_FIELDS = { 1: ['id', 'status', 'customer_email', 'items', 'created_at'], 2: ['orderId', 'status', 'customer_email', 'items', 'created_at'] } as const

const include = Type.String({ minLength: 1, maxLength: 200, pattern: '^[a-z_,]+$', description: '`items` embeds each order\'s items.' })
export const ListOrdersQuerySchema = Type.Object({
  status: Type.Optional(StatusSchema),
  ...Type.Partial(Type.Object({ ...pagingQueryProperties, include })).properties,
}, { additionalProperties: false })
export type ListOrdersQuery = Static<typeof ListOrdersQuerySchema>
export const ReadOrderQuerySchema = Type.Object({
  include: Type.Optional(Type.Literal('items', { description: 'Accepted for symmetry with lists: an order always carries its items.' })),
}, { additionalProperties: false })

export const ORDER_SCHEMAS = [OrderItemSchema, OrderV1Schema, OrderV2Schema, OrderListItemV1Schema, OrderListItemV2Schema, CreateOrderBodySchema]
