import { type Static, type TSchema, Type } from '@sinclair/typebox'
import { ALL_EVENTS } from './events.ts'
import { type CollectionSpec, pagingQueryProperties } from '../../http/toolkit/paging.ts'
import type { SchemasContext } from '../../http/contract/resources.ts'
import { LinkSchema, TimestampSchema, versionedSchemas } from '../../http/contract/schemas.ts'

/** A subscription's URL: at most 2 000 characters. */
export const WEBHOOK_URL_MAX = 2000

export const WebhookIdParamsSchema = Type.Object({
  webhook_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER, format: 'int64', description: 'The subscription\'s id.' }),
}, { additionalProperties: false })
export type WebhookIdParams = Static<typeof WebhookIdParamsSchema>

export const DeliveryParamsSchema = Type.Object({
  webhook_id: WebhookIdParamsSchema.properties.webhook_id,
  delivery_id: Type.String({ minLength: 1, maxLength: 100, pattern: '^[A-Za-z0-9_-]+$', description: 'The delivery\'s id.' }),
}, { additionalProperties: false })
export type DeliveryParams = Static<typeof DeliveryParamsSchema>

const url = Type.String({
  minLength: 1,
  maxLength: WEBHOOK_URL_MAX,
  description: 'http(s) URL, at most 2 000 characters, whose host resolves to public addresses only (as export callbacks: 422 otherwise). Checked again at each delivery; redirects are not followed.',
})
/** What a subscription may ask for: `eventTypes` (every type the registered resources raise), or `*`. */
const eventsSchema = (eventTypes: readonly string[]) => Type.Array(Type.Unsafe<string>({ type: 'string', enum: [...eventTypes, ALL_EVENTS] }), {
  minItems: 1,
  maxItems: eventTypes.length,
  uniqueItems: true,
  description: `Distinct event names (${eventTypes.join(', ')}), or \`["*"]\` for every event.`,
})
const description = Type.Union([Type.String({ maxLength: 500 }), Type.Null()], { description: 'Free text for people, at most 500 characters.' })

const createWebhookBodySchema = (eventTypes: readonly string[]) => Type.Object({
  url,
  events: eventsSchema(eventTypes),
  description: Type.Optional(description),
}, { $id: 'CreateWebhookBody', additionalProperties: false })
export type CreateWebhookBody = Static<ReturnType<typeof createWebhookBodySchema>>

/** RFC 7396 merge patch of the members a client sets (absent: unchanged). */
const patchWebhookBodySchema = (eventTypes: readonly string[]) => Type.Object({
  url: Type.Optional(url),
  events: Type.Optional(eventsSchema(eventTypes)),
  description: Type.Optional(description),
  enabled: Type.Optional(Type.Boolean({ description: '`true` resumes a disabled subscription (and clears `disabled_reason`); `false` disables it and gives up its pending deliveries.' })),
}, { $id: 'PatchWebhookBody', additionalProperties: false })
export type PatchWebhookBody = Static<ReturnType<typeof patchWebhookBodySchema>>

const fieldsOf = (eventTypes: readonly string[]) => ({
  url: Type.String({ maxLength: WEBHOOK_URL_MAX }),
  events: Type.Array(Type.String({ maxLength: 50 }), { maxItems: eventTypes.length }),
  description,
  enabled: Type.Boolean(),
  disabled_reason: Type.Union([Type.String({ maxLength: 500 }), Type.Null()], { description: 'Why it is disabled (20 failed deliveries in a row, or an administrator); null while enabled.' }),
  created_at: TimestampSchema,
  updated_at: TimestampSchema,
  _links: Type.Object({
    self: Type.Ref(LinkSchema),
    deliveries: Type.Ref(LinkSchema),
    ping: Type.Ref(LinkSchema),
    rotate_secret: Type.Ref(LinkSchema),
  }, { additionalProperties: false }),
})
const secret = Type.String({ pattern: '^whsec_', maxLength: 100, description: 'The signing secret (Standard Webhooks, `whsec_…`), shown only in this answer.' })

/** The `$id`s of a subscription's representations in `version`: whole, as a list item, with its secret. */
export const webhookRefs = (version: number) => [`WebhookV${version}`, `WebhookListItemV${version}`, `WebhookWithSecretV${version}`] as const

export const DeliverySchema = Type.Object({
  id: Type.String({ maxLength: 100 }),
  event_id: Type.String({ pattern: '^[0-9]+$', maxLength: 20 }),
  event_type: Type.String({ maxLength: 50 }),
  status: Type.Unsafe<'pending' | 'succeeded' | 'failed'>({ type: 'string', enum: ['pending', 'succeeded', 'failed'] }),
  attempts: Type.Integer({ minimum: 0, maximum: 1000 }),
  last_status_code: Type.Union([Type.Integer({ minimum: 0, maximum: 999 }), Type.Null()]),
  last_error: Type.Union([Type.String({ maxLength: 2048 }), Type.Null()]),
  next_attempt_at: Type.Union([TimestampSchema, Type.Null()], { description: 'When it is tried next, while pending.' }),
  created_at: TimestampSchema,
  delivered_at: Type.Union([TimestampSchema, Type.Null()]),
}, { $id: 'WebhookDelivery', additionalProperties: false })

export const PingSchema = Type.Object({
  webhook_id: Type.Integer({ minimum: 1, maximum: Number.MAX_SAFE_INTEGER }),
  type: Type.Literal('ping'),
}, { $id: 'WebhookPing', additionalProperties: false, description: 'The ping was recorded; it is delivered to this subscription alone, as any event.' })

export const ListWebhooksQuerySchema = Type.Object(Type.Partial(Type.Object(pagingQueryProperties)).properties, { additionalProperties: false })
export const WEBHOOKS: CollectionSpec<'id' | 'created_at'> = { name: 'webhooks', sortKeys: ['id', 'created_at'], defaultSort: '-created_at', includes: [] }
export const DELIVERIES: CollectionSpec<'created_at'> = { name: 'deliveries', sortKeys: ['created_at'], defaultSort: '-created_at', includes: [] }
const FIELD_NAMES = Object.keys(fieldsOf([])).filter(k => k !== '_links')
export const WEBHOOK_FIELDS = { 1: ['id', ...FIELD_NAMES], 2: ['webhookId', ...FIELD_NAMES] } as const
export const DELIVERY_FIELDS = Object.keys(DeliverySchema.properties)

/** The subscriptions' schemas, offering the events the registered resources raise. */
export function webhookSchemas ({ eventTypes }: SchemasContext): TSchema[] {
  const fields = fieldsOf(eventTypes)
  return [
    createWebhookBodySchema(eventTypes),
    patchWebhookBodySchema(eventTypes),
    ...versionedSchemas('Webhook', 'webhook', fields),
    // A list item: every member but the secret; exactly `fields` when given; always `_links.self`.
    ...versionedSchemas('WebhookListItem', 'webhook', { ...fields, _links: Type.Object({ self: Type.Ref(LinkSchema) }, { additionalProperties: false }) }, { partial: true }),
    ...versionedSchemas('WebhookWithSecret', 'webhook', { ...fields, secret }),
    DeliverySchema,
    PingSchema,
  ]
}
