import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { allowedActions, type Order, ORDER_SORT_KEYS, OrderService } from '../../domain/order.ts'
import type { Principal } from '../../domain/principal.ts'
import { sendRepresentation, strongEtag, validatorsOf } from '../../http/conditional.ts'
import { type CollectionSpec, parseListRequest, sendPage, storeQueryOf } from '../../http/paging.ts'
import type { Resource, ResourceContext } from '../../http/resources.ts'
import { linkBase } from '../../http/versioning.ts'
import { answerWrite, writtenResource } from '../../http/write.ts'
import { COMMON_ERRORS, NotModifiedSchema, problemResponses } from '../shared/schemas.ts'
import * as S from './schemas.ts'

const collection: CollectionSpec<typeof ORDER_SORT_KEYS[number]> = { name: 'orders', sortKeys: ORDER_SORT_KEYS, defaultSort: '-created_at', includes: ['items'] }
const config = { requiredScope: 'orders:write' }
const tags = ['orders']
const READ_ERRORS = problemResponses(...COMMON_ERRORS, 403, 404, 422)

/** Contract §2, order rows: the caller's own orders (admin: all), a state machine, items. */
async function orderRoutes (app: FastifyInstance, ctx: ResourceContext): Promise<void> {
  const { version, cursors } = ctx
  const idName = version === 1 ? 'id' : 'orderId'
  const reader = new OrderService(ctx.store.orders)
  const [OrderRef, ItemRef] = [Type.Ref(version === 1 ? S.OrderV1Schema : S.OrderV2Schema), Type.Ref(version === 1 ? S.OrderListItemV1Schema : S.OrderListItemV2Schema)]

  const data = (o: Order): Record<string, unknown> =>
    ({ [idName]: o.id, status: o.status, customer_email: o.customerEmail, items: o.items, created_at: o.createdAt })
  const render = (base: string, o: Order) => {
    const self = `${base}/orders/${o.id}`
    const cancel = allowedActions(o.status).includes('cancel') ? { cancel: { href: `${self}/cancel`, method: 'POST' } } : {}
    return { ...data(o), _links: { self: { href: self }, items: { href: `${self}/items` }, ...cancel } }
  }
  const written = (req: FastifyRequest, o: Order, status: 200 | 201) => writtenResource(req, 'orders', o, render(linkBase(req), o), status)

  app.get<{ Querystring: S.ListOrdersQuery }>('/orders', ctx.route({
    config,
    schema: { tags, summary: 'List your orders (admin: all)', querystring: S.ListOrdersQuerySchema, response: { 200: Type.Array(ItemRef), 304: NotModifiedSchema, ...READ_ERRORS } },
  }), async (req, reply) => {
    const { status, ...paging } = req.query
    const filter = status === undefined ? {} : { status }
    const lr = parseListRequest(req, paging, collection, filter, S.ORDER_FIELDS[version], cursors)
    const withItems = lr.include.includes('items') || (lr.fields?.includes('items') ?? false)
    const page = await reader.list(storeQueryOf(lr, filter), req.principal, withItems)
    const names = lr.fields ?? S.ORDER_FIELDS[version].filter(f => f !== 'items' || withItems)
    const base = linkBase(req)
    return sendPage(req, reply, lr, page, cursors, {
      render: o => {
        const d = data(o)
        return { ...Object.fromEntries(names.map(n => [n, d[n]])), _links: { self: { href: `${base}/orders/${o.id}` } } }
      },
      sortValues: o => lr.sort.map(t => t.key === 'id' ? o.id : o.createdAt),
      audience: 'private',
    })
  })

  app.post<{ Body: S.CreateOrderBody }>('/orders', ctx.route({
    config,
    schema: { tags, summary: 'Place an order', description: 'Status PROCESSING. Needs `orders:write`.', body: Type.Ref(S.CreateOrderBodySchema), response: { 201: OrderRef, ...problemResponses(...COMMON_ERRORS, 403, 409, 413, 415, 422) } },
  }), async (req, reply) => {
    const input = { customerEmail: req.body.customer_email, items: req.body.items }
    return await answerWrite(req, reply, async uow => written(req, await new OrderService(uow.orders).create(input, req.principal as Principal), 201))
  })

  app.get<{ Params: S.OrderIdParams }>('/orders/:order_id', ctx.route({
    config,
    schema: { tags, summary: 'Read an order', params: S.OrderIdParamsSchema, querystring: S.ReadOrderQuerySchema, response: { 200: OrderRef, 304: NotModifiedSchema, ...READ_ERRORS } },
  }), async (req, reply) => {
    const order = await reader.get(req.params.order_id, req.principal)
    return sendRepresentation(req, reply, render(linkBase(req), order), { ...validatorsOf(req, 'orders', order), audience: 'private' })
  })

  app.get<{ Params: S.OrderIdParams }>('/orders/:order_id/items', ctx.route({
    config,
    schema: { tags, summary: 'The items of an order', params: S.OrderIdParamsSchema, response: { 200: Type.Array(Type.Ref(S.OrderItemSchema)), 304: NotModifiedSchema, ...READ_ERRORS } },
  }), async (req, reply) => {
    const order = await reader.get(req.params.order_id, req.principal)
    return sendRepresentation(req, reply, order.items, { etag: strongEtag('order-items', order.id, order.revision, order.updatedAt), audience: 'private' })
  })

  app.post<{ Params: S.OrderIdParams }>('/orders/:order_id/cancel', ctx.route({
    config,
    schema: { tags, summary: 'Cancel an order', description: 'Only while PROCESSING; otherwise 409 ORDER_NOT_CANCELLABLE.', params: S.OrderIdParamsSchema, response: { 200: OrderRef, 204: Type.Null(), ...problemResponses(...COMMON_ERRORS, 403, 404, 409, 413, 422) } },
  }), async (req, reply) => {
    return await answerWrite(req, reply, async uow => written(req, await new OrderService(uow.orders).act(req.params.order_id, req.principal as Principal, 'cancel'), 200))
  })
}

export const ordersResource: Resource = { name: 'orders', description: 'Orders and their items', path: '/orders', schemas: S.ORDER_SCHEMAS, routes: orderRoutes }
