import { setTimeout as sleep } from 'node:timers/promises'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyRequest } from 'fastify'
import { v7 as uuidv7 } from 'uuid'
import type { Clock } from '../../clock.ts'
import type { Principal, Viewer } from '../../domain/principal.ts'
import { AppError, fieldError, validationFailed } from '../../errors.ts'
import { listHandler } from '../../http/toolkit/collection.ts'
import { preconditionOf, sendResource } from '../../http/toolkit/conditional.ts'
import { MERGE_PATCH } from '../../http/pipeline/content-type.ts'
import type { Resource, RouteContext } from '../../http/contract/resources.ts'
import { idNameOf, linkBase } from '../../http/protocol/versioning.ts'
import { answerDelete, answerWrite, writtenResource } from '../../http/toolkit/write.ts'
import { COMMON_ERRORS, EmptyBodySchema, NoContentSchema, NotModifiedSchema, problemResponses } from '../../http/contract/schemas.ts'
import type { ListQuery, Store, UnitOfWork } from '../../store/store.ts'
import { checkCallbackUrl } from './callback-url.ts'
import { ALL_EVENTS } from './events.ts'
import { WEBHOOK_FAN_OUT_JOB } from './fan-out.ts'
import { WEBHOOK_DELIVERIES_JOB } from './webhook-sender.ts'
import { webhooksProblems } from './problems.ts'
import * as S from './schemas.ts'
import { newSecret, type Sealing, type SecretBox } from './secrets.ts'
import type { WebhookDelivery } from './store.ts'
import { type Subscription, webhooksStore } from './subscriptions-store.ts'

declare module '../../http/contract/resources.ts' {
  interface Services {
    /** The box that seals subscriptions' secrets, resolved once at start-up (secrets.ts). */
    readonly webhookSealing: Sealing
  }
}

const config = { requiredScope: 'admin' } as const
const tags = ['webhooks']
const SYSTEM: Viewer = { subject: 'system', scopes: new Set(['admin']), kind: 'jwt' }
const notFound = (id: number) => new AppError('WEBHOOK_NOT_FOUND', `No webhook subscription ${id} exists.`)

/** The events a subscription asks for, or 422: distinct known names (the schema), or `*` alone. */
function eventsOf (events: readonly string[]): string {
  if (events.includes(ALL_EVENTS) && events.length > 1) {
    throw validationFailed([fieldError('events', 'INVALID_VALUE', '"*" stands for every event; give it alone, or list the events.')])
  }
  return JSON.stringify(events)
}

/** The one URL check export callbacks use too (callback-url.ts), or 422 naming `url`. */
async function checkedUrl (url: string, ctx: RouteContext): Promise<string> {
  const check = await checkCallbackUrl(url, ctx.config.eventLog.webhookAllowLoopback)
  if (!check.ok) throw validationFailed([fieldError('url', 'INVALID_VALUE', check.reason)])
  return url
}

/** Secrets are sealed under a key the service holds: without one (PostgreSQL, no WEBHOOK_SECRET) it can keep none. */
function secretBox (ctx: RouteContext): SecretBox {
  const { box } = ctx.services.webhookSealing
  if (box === null) throw new AppError('WEBHOOK_SECRET_NOT_SET')
  return box
}

/** A delivery as a page of a list sees it: paging keys on `id`, its ETag on `revision` and `updatedAt`. */
type PagedDelivery = Omit<WebhookDelivery, 'id'> & { id: number, revision: number, updatedAt: string }

function deliveryData (d: WebhookDelivery | PagedDelivery): Record<string, unknown> {
  return {
    id: d.id,
    event_id: String(d.eventId ?? ''),
    event_type: d.eventType ?? '',
    status: d.state === 'delivered' ? 'succeeded' : d.state,
    attempts: d.attempts,
    last_status_code: d.lastStatusCode,
    last_error: d.lastError,
    next_attempt_at: d.nextAttemptAt,
    created_at: d.createdAt,
    delivered_at: d.deliveredAt,
  }
}

/** Webhook subscriptions (`admin`). */
/** How often a deletion looks again whether a sender still holds one of the subscription's deliveries. */
const HELD_POLL_MS = 25

/**
 * Waits until no sender, on any instance, holds a delivery of subscription `id`: an attempt
 * claimed before the deletion committed has then been answered or cut, and recorded, so none is
 * sent after the 204. Then deletes what the attempts left. Bounded by the lease (the attempt's
 * timeout and a few seconds): a sender that died lets it lapse.
 */
async function attemptsEnded (store: Store, clock: Clock, id: number, signal: AbortSignal): Promise<void> {
  while (await store.webhooks.heldByWebhook(id, clock.now()) > 0) {
    if (signal.aborted) return
    await sleep(HELD_POLL_MS)
  }
  await store.webhooks.deleteByWebhook(id, clock.now())
}

async function webhookRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  const { version, store } = ctx
  const idName = idNameOf(version, 'webhook')
  const [Ref, ItemRef, WithSecretRef] = S.webhookRefs(version)
  const data = (s: Subscription): Record<string, unknown> => ({
    [idName]: s.id,
    url: s.url,
    events: JSON.parse(s.events) as string[],
    description: s.description,
    enabled: s.status === 'enabled',
    disabled_reason: s.disabledReason,
    created_at: s.createdAt,
    updated_at: s.updatedAt,
  })
  const render = (req: FastifyRequest, s: Subscription) => {
    const self = `${linkBase(req)}/webhooks/${s.id}`
    return { ...data(s), _links: { self: { href: self }, deliveries: { href: `${self}/deliveries` }, ping: { href: `${self}/ping`, method: 'POST' }, rotate_secret: { href: `${self}/rotate-secret`, method: 'POST' } } }
  }
  const find = async (uow: Pick<UnitOfWork, 'webhookSubscriptions'>, id: number): Promise<Subscription> => {
    const s = await uow.webhookSubscriptions.find(id, SYSTEM)
    if (s === null) throw notFound(id)
    return s
  }
  /** The subscription, when the request's If-Match / If-Unmodified-Since holds for it (else 412). */
  const current = async (req: FastifyRequest, uow: UnitOfWork, id: number): Promise<Subscription> => {
    const s = await find(uow, id)
    const holds = preconditionOf(req, 'webhooks')
    if (holds !== undefined && !holds(s)) throw new AppError('PRECONDITION_FAILED')
    return s
  }
  const READ_ERRORS = problemResponses(...COMMON_ERRORS, 403, 404, 422)
  const WRITE_ERRORS = problemResponses(...COMMON_ERRORS, 403, 404, 409, 412, 413, 415, 422)

  app.post<{ Body: S.CreateWebhookBody }>('/webhooks', ctx.route({
    config,
    schema: { tags, summary: 'Subscribe to events', description: 'Needs `admin`. The answer holds `secret`, the signing secret, shown only here (and after a rotation). On PostgreSQL with no `WEBHOOK_SECRET` set: 409 `WEBHOOK_SECRET_NOT_SET`.', body: Type.Ref('CreateWebhookBody'), response: { 201: Type.Ref(WithSecretRef), ...problemResponses(...COMMON_ERRORS, 403, 409, 413, 415, 422) } },
  }), async (req, reply) => {
    const events = eventsOf(req.body.events)
    const url = await checkedUrl(req.body.url, ctx)
    const box = secretBox(ctx)
    const secret = newSecret()
    return await answerWrite(ctx.store, req, reply, async uow => {
      const values = { url, events, description: req.body.description ?? null, disabled_reason: null, secret: box.seal(secret), previous_secret: null, previous_secret_until: null, failures: 0, after_event_id: await uow.events.lastId() }
      const s = await uow.webhookSubscriptions.insert((req.principal as Principal).subject, 'enabled', values, [], ctx.clock.now())
      return writtenResource(req, 'webhooks', s, { ...render(req, s), secret }, 201)
    })
  })

  app.get('/webhooks', ctx.route({
    config,
    schema: { tags, summary: 'List webhook subscriptions', querystring: S.ListWebhooksQuerySchema, response: { 200: Type.Array(Type.Ref(ItemRef)), 304: NotModifiedSchema, ...READ_ERRORS } },
  }), listHandler(ctx.cursors, {
    collection: S.WEBHOOKS,
    fieldNames: S.WEBHOOK_FIELDS[version],
    defaultFields: () => S.WEBHOOK_FIELDS[version],
    data,
    selfLink: true,
    audience: 'private',
    read: async (req, query: ListQuery<'id' | 'created_at', Record<string, never>>) => await store.webhookSubscriptions.list(query, req.principal),
  }))

  app.get<{ Params: S.WebhookIdParams }>('/webhooks/:webhook_id', ctx.route({
    config,
    schema: { tags, summary: 'Read a webhook subscription', params: S.WebhookIdParamsSchema, response: { 200: Type.Ref(Ref), 304: NotModifiedSchema, ...READ_ERRORS } },
  }), async (req, reply) => {
    const s = await find(store, req.params.webhook_id)
    return sendResource(req, reply, 'webhooks', s, render(req, s), 'private')
  })

  app.patch<{ Params: S.WebhookIdParams, Body: S.PatchWebhookBody }>('/webhooks/:webhook_id', ctx.route({
    config: { ...config, bodyTypes: [MERGE_PATCH], acceptPatch: [MERGE_PATCH] },
    schema: {
      tags,
      summary: 'Change a webhook subscription',
      description: '`application/merge-patch+json` (RFC 7396) of `url`, `events`, `description`, `enabled`. `enabled: false` gives up its pending deliveries; `enabled: true` resumes it after it was disabled.',
      params: S.WebhookIdParamsSchema,
      body: Type.Ref('PatchWebhookBody'),
      response: { 200: Type.Ref(Ref), 204: NoContentSchema, ...WRITE_ERRORS },
    },
  }), async (req, reply) => {
    const id = req.params.webhook_id
    const events = req.body.events === undefined ? undefined : eventsOf(req.body.events)
    const url = req.body.url === undefined ? undefined : await checkedUrl(req.body.url, ctx)
    return await answerWrite(ctx.store, req, reply, async uow => {
      const before = await current(req, uow, id)
      const now = ctx.clock.now()
      const changes = { ...(url !== undefined ? { url } : {}), ...(events !== undefined ? { events } : {}), ...(req.body.description !== undefined ? { description: req.body.description } : {}), ...(req.body.enabled !== undefined ? { enabled: req.body.enabled } : {}) }
      const after = await uow.webhookSubscriptions.change(id, changes, now, before.revision)
      if (after === null) throw new AppError('PRECONDITION_FAILED', 'The subscription changed meanwhile; read it again.')
      if (req.body.enabled === false) await uow.webhooks.failPending(id, 'The subscription was disabled.', now)
      return writtenResource(req, 'webhooks', after, render(req, after), 200)
    })
  })

  app.delete<{ Params: S.WebhookIdParams }>('/webhooks/:webhook_id', ctx.route({
    config,
    schema: { tags, summary: 'Delete a webhook subscription', description: 'Its pending deliveries are dropped: none is sent after the 204.', params: S.WebhookIdParamsSchema, response: { 204: NoContentSchema, ...problemResponses(...COMMON_ERRORS, 403, 404, 412, 422) } },
  }), async (req, reply) => {
    const id = req.params.webhook_id
    return await answerDelete(ctx.store, req, reply, async uow => {
      await current(req, uow, id)
      // The deliveries no sender holds go now; a held one may be in flight on any instance.
      await uow.webhooks.deleteByWebhook(id, ctx.clock.now())
      await uow.webhookSubscriptions.delete(id)
    }, async () => { await attemptsEnded(store, ctx.clock, id, req.abandoned) })
  })

  app.post<{ Params: S.WebhookIdParams }>('/webhooks/:webhook_id/rotate-secret', ctx.route({
    config: { ...config, optionalBody: true },
    schema: { tags, summary: 'Rotate the signing secret', description: 'Answers the new `secret`, shown only here. For the next 24 h every delivery carries two signatures, the new secret\'s and the old one\'s.', params: S.WebhookIdParamsSchema, body: EmptyBodySchema, response: { 200: Type.Ref(WithSecretRef), 204: NoContentSchema, ...WRITE_ERRORS } },
  }), async (req, reply) => {
    const box = secretBox(ctx)
    const secret = newSecret()
    return await answerWrite(ctx.store, req, reply, async uow => {
      await current(req, uow, req.params.webhook_id)
      const s = await uow.webhookSubscriptions.rotate(req.params.webhook_id, box.seal(secret), ctx.clock.now())
      if (s === null) throw notFound(req.params.webhook_id)
      return writtenResource(req, 'webhooks', s, { ...render(req, s), secret }, 200)
    })
  })

  app.post<{ Params: S.WebhookIdParams }>('/webhooks/:webhook_id/ping', ctx.route({
    config: { ...config, optionalBody: true },
    schema: { tags, summary: 'Send a ping event', description: 'Records an event `{id, type: "ping", occurred_at, data: {webhook_id}}` delivered to this subscription alone.', params: S.WebhookIdParamsSchema, body: EmptyBodySchema, response: { 202: Type.Ref(S.PingSchema), ...WRITE_ERRORS } },
  }), async (req, reply) => await answerWrite(ctx.store, req, reply, async uow => {
    const s = await find(uow, req.params.webhook_id)
    uow.events.record({ type: 'ping', data: { webhook_id: s.id }, owner: null, public: false, webhookId: s.id })
    uow.onCommit(() => { ctx.jobs.wake(WEBHOOK_FAN_OUT_JOB) })
    return { status: 202, body: { webhook_id: s.id, type: 'ping' } }
  }))

  app.get<{ Params: S.WebhookIdParams }>('/webhooks/:webhook_id/deliveries', ctx.route({
    config,
    schema: { tags, summary: 'The subscription\'s deliveries, newest first', params: S.WebhookIdParamsSchema, querystring: S.ListWebhooksQuerySchema, response: { 200: Type.Array(Type.Ref(S.DeliverySchema)), 304: NotModifiedSchema, ...READ_ERRORS } },
  }), async (req, reply) => {
    const s = await find(store, (req.params as S.WebhookIdParams).webhook_id)
    return await listHandler(ctx.cursors, {
      collection: S.DELIVERIES,
      fieldNames: S.DELIVERY_FIELDS,
      defaultFields: () => S.DELIVERY_FIELDS,
      data: (d: PagedDelivery) => deliveryData(d),
      selfLink: false,
      audience: 'private',
      read: async (_req, query: ListQuery<'created_at', unknown>) => {
        const page = await store.webhooks.listByWebhook(s.id, query as ListQuery<'created_at', Record<string, never>>)
        // Paging and its ETag read each item's id, revision and update time: a delivery's attempts stand for its revision.
        return { ...page, items: page.items.map(d => ({ ...d, id: d.id as unknown as number, revision: d.attempts, updatedAt: `${d.state}:${d.deliveredAt ?? ''}:${d.nextAttemptAt ?? ''}` })) }
      },
    })(req, reply)
  })

  app.post<{ Params: S.DeliveryParams }>('/webhooks/:webhook_id/deliveries/:delivery_id/redeliver', ctx.route({
    config: { ...config, optionalBody: true },
    schema: { tags, summary: 'Deliver an event again', description: 'A new delivery of the same event, with the same `webhook-id` (the event id), so receivers that drop duplicates drop it.', params: S.DeliveryParamsSchema, body: EmptyBodySchema, response: { 202: Type.Ref(S.DeliverySchema), ...WRITE_ERRORS } },
  }), async (req, reply) => await answerWrite(ctx.store, req, reply, async uow => {
    const s = await find(uow, req.params.webhook_id)
    const d = await uow.webhooks.findById(req.params.delivery_id)
    if (d === null || d.webhookId !== s.id) throw new AppError('DELIVERY_NOT_FOUND', `Subscription ${s.id} has no delivery ${req.params.delivery_id}.`)
    const id = `dlv_${uuidv7()}`
    await uow.webhooks.enqueue({ id, webhookId: s.id, eventId: d.eventId, eventType: d.eventType, url: s.url, payload: d.payload }, ctx.clock.now())
    uow.onCommit(() => { ctx.jobs.wake(WEBHOOK_DELIVERIES_JOB) })
    const again = await uow.webhooks.findById(id)
    return { status: 202, body: deliveryData(again!), location: `${linkBase(req)}/webhooks/${s.id}/deliveries` }
  }))
}

export const webhooksResource: Resource = {
  name: 'webhooks',
  description: 'Webhook subscriptions: signed deliveries of events (admin only)',
  path: '/webhooks',
  problems: webhooksProblems,
  schemas: S.webhookSchemas,
  routes: webhookRoutes,
  store: webhooksStore,
}
