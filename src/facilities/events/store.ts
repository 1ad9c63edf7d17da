import type { Generated } from 'kysely'
import type { ListPage, ListQuery } from '../../store/store.ts'
import type { Timestamp } from '../../store/tables.ts'

declare module '../../store/tables.ts' {
  interface Database {
    webhook_deliveries: WebhookDeliveriesTable
    events: EventsTable
  }
}

declare module '../../store/store.ts' {
  interface Repositories {
    readonly webhooks: WebhookStore
  }
}

export interface WebhookDeliveriesTable {
  /** The Webhook-Id: the same on every attempt, so a receiver can drop duplicates. */
  id: string
  export_id: number | null
  url: string
  /** The body exactly as first written, so every attempt sends the same bytes. */
  payload: string
  state: 'pending' | 'delivered' | 'failed'
  attempts: Generated<number>
  next_attempt_at: Timestamp
  lease_until: Timestamp | null
  last_error: string | null
  created_at: Timestamp
  updated_at: Timestamp
  /** The subscription and event of a subscription's delivery; null for a resource's callback. */
  webhook_id: number | null
  event_id: number | null
  event_type: string | null
  last_status_code: number | null
  delivered_at: Timestamp | null
}

export interface EventsTable {
  id: Generated<number>
  type: string
  occurred_at: Timestamp
  owner: string | null
  /** 1 when every principal may see it on the stream. */
  public: number
  webhook_id: number | null
  /** The event's `data` as JSON. */
  data: string
  /** Who caused it, as JSON (`{kind, id, name}`). */
  actor: string | null
}

/** One webhook to send, and how often it was tried. */
export interface WebhookDelivery {
  readonly id: string
  readonly exportId: number | null
  /** A subscription's delivery: the subscription, and the event it carries (its `webhook-id`). */
  readonly webhookId: number | null
  readonly eventId: number | null
  readonly eventType: string | null
  readonly url: string
  /** The body; null for a subscription's delivery, whose body is its event's (read when it is sent). */
  readonly payload: string | null
  readonly state: 'pending' | 'delivered' | 'failed'
  readonly attempts: number
  readonly lastStatusCode: number | null
  readonly lastError: string | null
  readonly nextAttemptAt: string | null
  readonly createdAt: string
  readonly deliveredAt: string | null
}

export interface NewDelivery {
  readonly id: string
  readonly exportId?: number | null
  readonly webhookId?: number | null
  readonly eventId?: number | null
  readonly eventType?: string | null
  readonly url: string
  /**
   * The body, or null for the event's own (`eventId`'s, as `eventJson` renders it): a subscription's
   * delivery refers to its event rather than holding a copy, and its event is kept while it exists.
   */
  readonly payload: string | null
}

/** The webhook outbox: written with the state it announces, sent after commit, retried until delivered or given up. */
export interface WebhookStore {
  enqueue (delivery: NewDelivery, now: Date): Promise<void>
  /** Queues many at once (a fan-out's), in order. */
  enqueueAll (deliveries: readonly NewDelivery[], now: Date): Promise<void>
  /**
   * Takes up to `limit` due deliveries for `leaseMs` (attempts + 1); another sender skips them
   * meanwhile. A subscription's deliveries start in event order: one is taken only once every
   * earlier one of its subscription has been started. Each comes with its body: a subscription's
   * delivery with its event's, or null if the event is gone (it cannot be sent then).
   */
  claimDue (now: Date, leaseMs: number, limit: number): Promise<WebhookDelivery[]>
  /** Marks deliveries done, each with the receiver's status. */
  delivered (ids: readonly string[], now: Date, statusCode?: number): Promise<void>
  /** Tries again at `at` (when given), or gives up. */
  failedAttempt (id: string, error: string, at: Date | null, now: Date, statusCode?: number | null): Promise<void>
  /** An attempt cut by the sender's stop: due again at once, not counted. */
  handBack (id: string, error: string, now: Date): Promise<void>
  findById (id: string): Promise<WebhookDelivery | null>
  /** A subscription's deliveries, newest first. */
  listByWebhook (webhookId: number, query: ListQuery<'created_at', Record<string, never>>): Promise<ListPage<WebhookDelivery>>
  /**
   * Deletes a subscription's deliveries (it is being deleted), all but those a sender holds at `now`
   * (claimed, the lease not run out: an attempt may be in flight).
   */
  deleteByWebhook (webhookId: number, now: Date): Promise<void>
  /** How many of a subscription's pending deliveries a sender holds at `now` (those a claim may not take): attempts that may be in flight. */
  heldByWebhook (webhookId: number, now: Date): Promise<number>
  /** Gives up a subscription's pending deliveries with `reason` (it was disabled). */
  failPending (webhookId: number, reason: string, now: Date): Promise<void>
  /** How many deliveries wait, and since when the oldest waits. */
  backlog (): Promise<{ pending: number, oldestCreatedAt: string | null }>
  /** Deletes finished deliveries older than `cutoff`. */
  deleteFinishedBefore (cutoff: Date): Promise<number>
  /** The oldest event a delivery refers to (null when none): retention keeps it and every later one. */
  oldestEventHeld (): Promise<number | null>
}
