import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { allowedActions, type Move } from '../../domain/state-machine.ts'
import type { Principal } from '../../domain/principal.ts'
import { AppError } from '../../errors.ts'
import { act } from '../../http/toolkit/action.ts'
import { listHandler } from '../../http/toolkit/collection.ts'
import { sendRepresentation, sendResource, strongEtag } from '../../http/toolkit/conditional.ts'
import type { Resource, RouteContext } from '../../http/contract/resources.ts'
import type { EventInput, ListQuery } from '../../store/store.ts'
import { idNameOf, linkBase } from '../../http/protocol/versioning.ts'
import { answerWrite, writtenResource } from '../../http/toolkit/write.ts'
import { COMMON_ERRORS, EmptyBodySchema, NotModifiedSchema, problemResponses } from '../../http/contract/schemas.ts'
import { ordersProblems } from './problems.ts'
import * as S from './schemas.ts'
import { type Order, type OrderStatus, ordersStore } from './store.ts'

/** The state machine: each action, the states it starts from, and where it leads. */
export const ORDER_MOVES = { cancel: { from: ['PROCESSING'], to: 'CANCELLED', refused: 'ORDER_NOT_CANCELLABLE' } } satisfies Record<string, Move<OrderStatus>>
const notFound = (id: number) => new AppError('ORDER_NOT_FOUND', `No order ${id} exists, or it is not yours.`)
const config = { requiredScope: 'orders:write' } as const
const tags = ['orders']
const READ_ERRORS = problemResponses(...COMMON_ERRORS, 403, 404, 422)

function orderData (o: Order, idName: string): Record<string, unknown> {
  return { [idName]: o.id, status: o.status, customer_email: o.customerEmail, items: o.items, created_at: o.createdAt }
}

function renderOrder (o: Order, idName: string, base: string) {
  const self = `${base}/orders/${o.id}`
  const actions = Object.fromEntries(allowedActions(ORDER_MOVES, o.status).map(a => [a, { href: `${self}/${a}`, method: 'POST' }]))
  return { ...orderData(o, idName), _links: { self: { href: self }, items: { href: `${self}/items` }, ...actions } }
}

/** The events an order's change raises. */
const ORDER_EVENT_TYPES = ['order.created', 'order.cancelled'] as const

/** The order's event: its version-1 representation, seen by its owner (and admins). */
function orderEvent (type: typeof ORDER_EVENT_TYPES[number], o: Order): EventInput {
  return { type, data: renderOrder(o, 'id', ''), owner: o.owner, public: false }
}

/** Order rows: the caller's own orders (admin: all), a state machine, items. */
async function orderRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const { version, store } = ctx
  const idName = idNameOf(version, 'order')
  const [OrderRef, ItemRef] = version === 1 ? [S.OrderV1Schema, S.OrderListItemV1Schema] : [S.OrderV2Schema, S.OrderListItemV2Schema]
  const data = (o: Order): Record<string, unknown> => orderData(o, idName)
  const render = (req: FastifyRequest, o: Order) => renderOrder(o, idName, linkBase(req))
  const find = async (req: FastifyRequest<{ Params: S.OrderIdParams }>) => {
    const order = await store.orders.find(req.params.order_id, req.principal)
    if (order === null) throw notFound(req.params.order_id)
    return order
  }

  app.get('/orders', ctx.route({
    config,
    schema: { tags, summary: 'List your orders (admin: all)', querystring: S.ListOrdersQuerySchema, response: { 200: Type.Array(Type.Ref(ItemRef)), 304: NotModifiedSchema, ...READ_ERRORS } },
  }), listHandler(ctx.cursors, {
    collection: S.ORDERS,
    fieldNames: S.ORDER_FIELDS[version],
    defaultFields: lr => S.ORDER_FIELDS[version].filter(f => f !== 'items' || lr.include.includes('items')),
    data,
    selfLink: true,
    audience: 'private',
    read: async (req, query: ListQuery<S.OrderSortKey, { status?: OrderStatus }>, lr) => await store.orders.list(query, req.principal, lr.include.includes('items') || (lr.fields?.includes('items') ?? false)),
  }))

  app.post<{ Body: S.CreateOrderBody }>('/orders', ctx.route({
    config,
    schema: { tags, summary: 'Place an order', description: 'Status PROCESSING. Needs `orders:write`.', body: Type.Ref(S.CreateOrderBodySchema), response: { 201: Type.Ref(OrderRef), ...problemResponses(...COMMON_ERRORS, 403, 409, 413, 415, 422) } },
  }), async (req, reply) => await answerWrite(ctx.store, req, reply, async uow => {
    const order = await uow.orders.insert((req.principal as Principal).subject, 'PROCESSING', { customer_email: req.body.customer_email }, req.body.items, ctx.clock.now())
    uow.events.record(orderEvent('order.created', order))
    return writtenResource(req, 'orders', order, render(req, order), 201)
  }))

  app.get<{ Params: S.OrderIdParams }>('/orders/:order_id', ctx.route({
    config,
    schema: { tags, summary: 'Read an order', params: S.OrderIdParamsSchema, querystring: S.ReadOrderQuerySchema, response: { 200: Type.Ref(OrderRef), 304: NotModifiedSchema, ...READ_ERRORS } },
  }), async (req, reply) => {
    const order = await find(req)
    return sendResource(req, reply, 'orders', order, render(req, order), 'private')
  })

  app.get<{ Params: S.OrderIdParams }>('/orders/:order_id/items', ctx.route({
    config,
    schema: { tags, summary: 'The items of an order', params: S.OrderIdParamsSchema, response: { 200: Type.Array(Type.Ref(S.OrderItemSchema)), 304: NotModifiedSchema, ...READ_ERRORS } },
  }), async (req, reply) => {
    const order = await find(req)
    return sendRepresentation(req, reply, order.items, { etag: strongEtag('order-items', order.id, order.revision, order.updatedAt), audience: 'private' })
  })

  app.post<{ Params: S.OrderIdParams }>('/orders/:order_id/cancel', ctx.route({
    config: { ...config, optionalBody: true },
    schema: { tags, summary: 'Cancel an order', description: 'Only while PROCESSING; otherwise 409 ORDER_NOT_CANCELLABLE. No body, or `{}`.', params: S.OrderIdParamsSchema, body: EmptyBodySchema, response: { 200: Type.Ref(OrderRef), 204: Type.Null(), ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422) } },
  }), async (req, reply) => await answerWrite(ctx.store, req, reply, async uow => {
    const order = await act(req, 'orders', uow.orders, req.params.order_id, ORDER_MOVES.cancel, () => notFound(req.params.order_id), ctx.clock)
    uow.events.record(orderEvent('order.cancelled', order))
    return writtenResource(req, 'orders', order, render(req, order), 200)
  }))
}

export const ordersResource: Resource = { name: 'orders', description: 'Orders and their items', path: '/orders', problems: ordersProblems, schemas: S.ORDER_SCHEMAS, eventTypes: ORDER_EVENT_TYPES, routes: orderRoutes, store: ordersStore, scopes: [config.requiredScope] }
