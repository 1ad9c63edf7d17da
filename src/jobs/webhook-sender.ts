import { lookup as dnsLookup, type LookupAddress } from 'node:dns'
import { setMaxListeners } from 'node:events'
import http from 'node:http'
import https from 'node:https'
import { isIP } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'
import type { Counter } from 'prom-client'
import { Webhook } from 'standardwebhooks'
import { addressAllowed, classifyAddress } from '../domain/callback-url.ts'
import type { Store, WebhookDelivery } from '../store/store.ts'
import { PollLoop } from './loop.ts'

/** Where a subscription's delivery goes now, and the secrets (`whsec_…`) it is signed with: two during a rotation. */
export interface DeliveryTarget {
  readonly url: string
  readonly secrets: readonly string[]
}

/** What the sender asks of whoever keeps subscriptions (src/resources/webhooks). */
export interface SubscriptionTargets {
  /** The subscription's target, or null when it is gone or disabled: the delivery is then given up. */
  target (webhookId: number): Promise<DeliveryTarget | null>
  /** A delivery of the subscription ended: delivered, or given up after its last attempt. */
  ended (webhookId: number, delivered: boolean): Promise<void>
}

export interface WebhookSenderOptions {
  readonly store: Store
  readonly log: FastifyBaseLogger
  /** `whsec_…`; without it nothing is sent (the API refuses callback URLs then). */
  readonly secret: string | null
  readonly allowLoopback: boolean
  readonly timeoutMs: number
  readonly maxAttempts: number
  readonly retryBaseMs: number
  readonly pollMs: number
  /** Counts attempts by outcome: delivered, retry, failed. */
  readonly attempts: Counter<'outcome'>
}

/** A delivery's URL and the signers of its secrets. */
interface Target { readonly url: string, readonly signers: readonly Webhook[] }

const BATCH = 20
/** The User-Agent of every webhook (contract §12). */
export const WEBHOOK_USER_AGENT = `blog-post-service/${process.env.npm_package_version ?? '0.1.0'}`
const MAX_DELAY_MS = 60 * 60_000

/** Exponential backoff with full jitter: a random wait up to base·2^(n−1), at most an hour. */
export function retryDelay (attempt: number, baseMs: number, random = Math.random): number {
  return Math.floor(random() * Math.min(MAX_DELAY_MS, baseMs * 2 ** (attempt - 1)))
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void

/**
 * The connection's own name resolution, refusing addresses a webhook may not reach. Checking here,
 * on the addresses the socket will use, closes the gap a check before sending leaves (DNS rebinding).
 */
function guardedLookup (allowLoopback: boolean) {
  return (hostname: string, options: { all?: boolean, family?: number }, callback: LookupCallback): void => {
    dnsLookup(hostname, { family: options.family ?? 0, all: true }, (err, addresses) => {
      if (err) return callback(err, [])
      const refused = addresses.find(a => !addressAllowed(a.address, allowLoopback))
      if (refused !== undefined || addresses.length === 0) {
        const e = new Error(`${hostname} resolves to ${refused?.address ?? 'nothing'}, a ${refused ? classifyAddress(refused.address) : 'missing'} address`) as NodeJS.ErrnoException
        e.code = 'EADDRNOTALLOWED'
        return callback(e, [])
      }
      if (options.all === true) callback(null, addresses)
      else callback(null, addresses[0]!.address, addresses[0]!.family)
    })
  }
}

/**
 * Sends the webhook outbox: claims due deliveries (several instances share the work, each delivery
 * is held by one at a time), POSTs them signed per Standard Webhooks, and retries failures with
 * exponential backoff and jitter until delivered or `maxAttempts` is reached. At least once: the
 * `Webhook-Id` stays the same on every attempt so receivers can drop duplicates.
 */
export class WebhookSender {
  private readonly loop: PollLoop
  private readonly signer: Webhook | null
  private subscriptions: SubscriptionTargets | null = null

  constructor (private readonly opts: WebhookSenderOptions) {
    this.signer = opts.secret === null ? null : new Webhook(opts.secret)
    this.loop = new PollLoop('webhooks', opts.pollMs, opts.log, async signal => await this.tick(signal))
  }

  /** Lets the sender deliver subscriptions' deliveries (the webhooks resource registers itself). */
  serveSubscriptions (targets: SubscriptionTargets): void { this.subscriptions = targets }
  start (): void { this.loop.start() }
  wake (): void { this.loop.wake() }
  async stop (): Promise<void> { await this.loop.stop() }

  private async tick (signal: AbortSignal): Promise<boolean> {
    // Held a little longer than one attempt may take, so no other sender takes it meanwhile.
    // Each attempt listens for the stop: a batch's worth of listeners is expected.
    setMaxListeners(2 * BATCH, signal)
    // Writes go through units of work, so on SQLite they join the turn's group commit (one sync
    // for all the turn's writes) rather than syncing the log once each.
    const due = await this.opts.store.transaction(async uow => await uow.webhooks.claimDue(new Date(), this.opts.timeoutMs + 5_000, BATCH))
    // A subscription's target is read (and its secrets opened) once per batch; its deliveries wait
    // on the same promise, so they go on, and start, in the batch's (event) order.
    const targets = new Map<number, Promise<Target | null>>()
    await Promise.all(due.map(async d => { await this.attempt(d, targets, signal) }))
    // A batch holds a bounded share of each subscription's queue: while any was claimed, more may be
    // waiting behind it, so look again at once rather than after a poll.
    return due.length > 0
  }

  /** Where a delivery goes and how it is signed: a callback's own URL and WEBHOOK_SECRET, or its subscription's. */
  private async targetOf (d: WebhookDelivery, targets: Map<number, Promise<Target | null>>): Promise<Target & { messageId: string } | null> {
    if (d.webhookId === null) {
      if (this.signer === null) throw new Error('WEBHOOK_SECRET is not set, so the webhook cannot be signed')
      return { url: d.url, signers: [this.signer], messageId: d.id }
    }
    let target = targets.get(d.webhookId)
    if (target === undefined) {
      const subscriptions = this.subscriptions
      target = subscriptions === null
        ? Promise.resolve(null)
        : subscriptions.target(d.webhookId).then(t => t === null ? null : { url: t.url, signers: t.secrets.map(s => new Webhook(s)) })
      targets.set(d.webhookId, target)
    }
    const t = await target
    return t === null ? null : { ...t, messageId: String(d.eventId ?? d.id) }
  }

  private async attempt (d: WebhookDelivery, targets: Map<number, Promise<Target | null>>, stopping: AbortSignal): Promise<void> {
    const log = this.opts.log.child({ webhook_delivery: d.id, export_id: d.exportId, subscription_id: d.webhookId, event_id: d.eventId, attempt: d.attempts })
    let error: string
    let status: number | null = null
    try {
      const target = await this.targetOf(d, targets)
      const payload = d.payload
      if (payload === null) {
        // Retention keeps every event a delivery refers to; this is a guard, not a path.
        await this.opts.store.transaction(async uow => { await uow.webhooks.failedAttempt(d.id, 'The event is gone: past its retention.', null, new Date()) })
        return
      }
      if (target === null) {
        // Deleted (its deliveries went with it) or disabled since the delivery was made.
        await this.opts.store.transaction(async uow => { await uow.webhooks.failedAttempt(d.id, 'The subscription was disabled or deleted.', null, new Date()) })
        return
      }
      status = await this.post(payload, target, stopping)
      if (status >= 200 && status < 300) {
        const code = status
        await this.opts.store.transaction(async uow => { await uow.webhooks.delivered(d.id, new Date(), code) })
        this.opts.attempts.inc({ outcome: 'delivered' })
        log.info({ status }, 'webhook delivered')
        if (d.webhookId !== null) await this.subscriptions?.ended(d.webhookId, true)
        return
      }
      error = status >= 300 && status < 400 ? `the receiver answered ${status}; redirects are not followed` : `the receiver answered ${status}`
    } catch (err) {
      error = stopping.aborted
        ? 'the service stopped during the attempt'
        : ['TimeoutError', 'AbortError'].includes((err as Error).name) ? `no answer within ${this.opts.timeoutMs} ms` : String((err as Error).message ?? err)
    }
    const again = d.attempts < this.opts.maxAttempts
    const at = again ? new Date(Date.now() + retryDelay(d.attempts, this.opts.retryBaseMs)) : null
    await this.opts.store.transaction(async uow => { await uow.webhooks.failedAttempt(d.id, error, at, new Date(), status) })
    this.opts.attempts.inc({ outcome: again ? 'retry' : 'failed' })
    if (again) log.warn({ error, retry_at: at?.toISOString() }, 'webhook attempt failed; it will be retried')
    else log.error({ error }, 'webhook given up after its last attempt')
    if (!again && d.webhookId !== null) await this.subscriptions?.ended(d.webhookId, false)
  }

  /** One signed POST; resolves with the receiver's status. */
  private async post (payload: string, target: Target & { messageId: string }, stopping: AbortSignal): Promise<number> {
    const url = new URL(target.url)
    const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
    // An IP literal is connected to without a lookup: check it here.
    if (isIP(host) !== 0 && !addressAllowed(host, this.opts.allowLoopback)) {
      throw new Error(`${host} is a ${classifyAddress(host)} address`)
    }
    const body = Buffer.from(payload)
    const now = new Date()
    const headers = {
      'content-type': 'application/json',
      'content-length': String(body.length),
      'user-agent': WEBHOOK_USER_AGENT,
      'webhook-id': target.messageId,
      'webhook-timestamp': String(Math.floor(now.getTime() / 1000)),
      // During a rotation, the new secret's signature and the old one's, space-separated (Standard Webhooks).
      'webhook-signature': target.signers.map(s => s.sign(target.messageId, now, payload)).join(' '),
    }
    const client = url.protocol === 'https:' ? https : http
    // The attempt's deadline, and a shutdown (which does not wait for a slow receiver: the attempt
    // is retried, from any instance). A plain timer, not AbortSignal.any([AbortSignal.timeout()]):
    // Node may garbage-collect a timeout signal held only by a composite one before it fires
    // (nodejs/node#57736), and a receiver that never answers then held the attempt forever.
    const deadline = new AbortController()
    const timer = setTimeout(() => { deadline.abort(new DOMException(`no answer within ${this.opts.timeoutMs} ms`, 'TimeoutError')) }, this.opts.timeoutMs)
    const stop = () => { deadline.abort(stopping.reason) }
    stopping.addEventListener('abort', stop, { once: true })
    if (stopping.aborted) stop()
    try {
      return await new Promise<number>((resolve, reject) => {
        const req = client.request(url, {
          method: 'POST',
          headers,
          lookup: guardedLookup(this.opts.allowLoopback) as never,
          signal: deadline.signal,
          // Node's http.request never follows a redirect: a 3xx is an answer like any other (a failure).
        }, res => {
          // Only the status matters: the body is not read at all (a receiver sending megabytes
          // costs nothing), and the connection is closed rather than drained for reuse.
          resolve(res.statusCode ?? 0)
          res.destroy()
        })
        req.on('error', reject)
        req.end(body)
      })
    } finally {
      clearTimeout(timer)
      stopping.removeEventListener('abort', stop)
    }
  }
}
