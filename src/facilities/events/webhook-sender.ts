import { createHmac } from 'node:crypto'
import { setMaxListeners } from 'node:events'
import http from 'node:http'
import https from 'node:https'
import { isIP } from 'node:net'
import type { FastifyBaseLogger } from 'fastify'
import type { Counter } from 'prom-client'
import type { Clock } from '../../clock.ts'
import type { LeasedJob, Lease } from '../../jobs/job.ts'
import type { HeldLease } from '../../jobs/lease.ts'
import type { Store, UnitOfWork } from '../../store/store.ts'
import { addressAllowed, classifyAddress, guardedLookup } from './callback-url.ts'
import type { WebhookDelivery } from './store.ts'

/** Where a subscription's delivery goes now, and the secrets (`whsec_…`) it is signed with: two during a rotation. */
export interface DeliveryTarget {
  readonly url: string
  readonly secrets: readonly string[]
}

/** What the sender asks of whoever keeps subscriptions (the subscriptions' resource). */
export interface SubscriptionTargets {
  /** The subscription's target, or null when it is gone or disabled: the delivery is then given up. */
  target (webhookId: number): Promise<DeliveryTarget | null>
  /**
   * A delivery of the subscription ended: delivered, or given up after its last attempt; written in
   * `uow`, the sender's unit of work (a run of deliveries in a row is told once, by its last).
   */
  ended (uow: UnitOfWork, webhookId: number, delivered: boolean): Promise<void>
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
  /** The longest it sleeps without looking for due deliveries (a wake, or a retry falling due, ends it sooner). */
  readonly pollMs: number
  /** Counts attempts by outcome: delivered, retry, failed. */
  readonly attempts: Counter<'outcome'>
  /** What leases and retries are timed by (the composition root's, src/context.ts). */
  readonly clock: Clock
}

/** What an attempt got: written with the next claim, then counted and logged. */
type Outcome =
  | { readonly kind: 'delivered', readonly d: WebhookDelivery, readonly status: number }
  | { readonly kind: 'retry', readonly d: WebhookDelivery, readonly error: string, readonly status: number | null, readonly at: Date }
  | { readonly kind: 'failed', readonly d: WebhookDelivery, readonly error: string, readonly status: number | null }
  /** Given up without an attempt: its subscription or event is gone (neither counted nor a failure in a row). */
  | { readonly kind: 'dropped', readonly d: WebhookDelivery, readonly error: string, readonly status?: undefined }
  /** Cut by this instance's stop: due again at once, the attempt not counted (its last one must not fail it). */
  | { readonly kind: 'handedBack', readonly d: WebhookDelivery, readonly error: string, readonly status?: undefined }

/**
 * Signs as Standard Webhooks' `Webhook.sign` does (`v1,` and the base64 HMAC-SHA256 of
 * `<id>.<seconds>.<body>` under the secret's base64 key after `whsec_`), with node:crypto: the
 * package hashes in JavaScript, about ten times slower on a 5 KB event, and a delivery signs once
 * per secret. The package stays the reference: the tests check every signature with its verifier,
 * and this signer against its `sign`.
 */
export class WebhookSigner {
  private readonly key: Buffer
  constructor (secret: string) {
    this.key = Buffer.from(secret.startsWith('whsec_') ? secret.slice('whsec_'.length) : secret, 'base64')
    if (this.key.length === 0) throw new Error('A webhook secret cannot be empty.')
  }

  sign (messageId: string, at: Date, payload: string): string {
    return `v1,${createHmac('sha256', this.key).update(`${messageId}.${Math.floor(at.getTime() / 1000)}.${payload}`).digest('base64')}`
  }
}

/** A delivery's URL and the signers of its secrets. */
interface Target { readonly url: string, readonly signers: readonly WebhookSigner[] }

type SendError = NodeJS.ErrnoException & { reusedSocket?: boolean }

/** One attempt's request and answer, and why it was cut (its deadline, or a shutdown), if it was. */
interface Attempt { req: http.ClientRequest | null, res: http.IncomingMessage | null, reason: Error | null }

/** Deliveries claimed per unit of work: a claim's queries and commit are shared by its batch. */
const BATCH = 100
/** Connections open to one receiver at most; a batch's further deliveries to it wait for one, in order. */
const SOCKETS_PER_RECEIVER = 16
/** How much of a receiver's answer is read so that its connection can be used again; past it, the connection is closed. */
const ANSWER_CAP = 16 * 1024
/** An idle connection to a receiver is closed after this: sooner than a server's usual keep-alive (Node's is 5 s). */
const IDLE_MS = 4_000
/** The User-Agent of every webhook. */
export const WEBHOOK_USER_AGENT = `blog-post-service/${process.env.npm_package_version ?? '0.1.0'}`
const MAX_DELAY_MS = 60 * 60_000

/** Exponential backoff with full jitter: a random wait up to base·2^(n−1), at most an hour. */
export function retryDelay (attempt: number, baseMs: number, random = Math.random): number {
  return Math.floor(random() * Math.min(MAX_DELAY_MS, baseMs * 2 ** (attempt - 1)))
}

/** The sender's job name: wake it after a commit that queued a delivery. */
export const WEBHOOK_DELIVERIES_JOB = 'webhook-deliveries'

/**
 * Sends the webhook outbox, as a job of this instance: claims due deliveries (several instances share the work, each delivery
 * is held by one at a time), POSTs them signed per Standard Webhooks, and retries failures with
 * exponential backoff and jitter until delivered or `maxAttempts` is reached. At least once: the
 * `Webhook-Id` stays the same on every attempt so receivers can drop duplicates.
 */
export class WebhookSender implements LeasedJob<WebhookDelivery[]> {
  readonly name = WEBHOOK_DELIVERIES_JOB
  /**
   * A batch is held a little longer than one attempt may take, so no other sender takes it
   * meanwhile; an attempt's timeout bounds the run, so the lease is never renewed.
   */
  readonly lease: Lease<WebhookDelivery[]>
  /** When the earliest retry this sender wrote falls due: it sleeps until then rather than a whole poll. */
  private nextRetry = Infinity
  private readonly signer: WebhookSigner | null
  private subscriptions: SubscriptionTargets | null = null
  /** Connections to receivers, kept for the next delivery; an idle one is closed after IDLE_MS. */
  private readonly agents = {
    http: new http.Agent({ keepAlive: true, timeout: IDLE_MS, maxSockets: SOCKETS_PER_RECEIVER }),
    https: new https.Agent({ keepAlive: true, timeout: IDLE_MS, maxSockets: SOCKETS_PER_RECEIVER }),
  }

  /** Attempts of the batch just sent, written with the next claim (one unit of work, one commit). */
  private settled: Outcome[] = []

  constructor (private readonly opts: WebhookSenderOptions) {
    this.signer = opts.secret === null ? null : new WebhookSigner(opts.secret)
    this.lease = { ms: opts.timeoutMs + 5_000 }
  }

  /** Asked before each sleep: until the earliest retry it wrote falls due, at most a poll. */
  readonly pollMs = (): number => {
    const wait = this.nextRetry - this.opts.clock.now().getTime()
    if (wait > this.opts.pollMs) return this.opts.pollMs
    this.nextRetry = Infinity
    return Math.max(0, wait)
  }

  /** Lets the sender deliver subscriptions' deliveries (the webhooks resource registers itself). */
  serveSubscriptions (targets: SubscriptionTargets): void { this.subscriptions = targets }

  /**
   * One unit of work: writes what the last batch's attempts got, then claims the next batch, or
   * null when none is due. A batch holds a bounded share of each subscription's queue: while any
   * was claimed, more may be waiting behind it, and the runner claims again at once.
   */
  async claim (now: Date, leaseMs: number): Promise<WebhookDelivery[] | null> {
    const due = await this.settle(now, leaseMs)
    return due.length === 0 ? null : due
  }

  /** The batch's attempts; what they got is written with the next claim (or at the stop). */
  async run (due: WebhookDelivery[], held: HeldLease): Promise<void> {
    // Each attempt listens for the stop: a batch's worth of listeners is expected.
    setMaxListeners(2 * BATCH, held.signal)
    // A subscription's target is read (and its secrets opened) once per batch; its deliveries wait
    // on the same promise, so they go on, and start, in the batch's (event) order.
    const targets = new Map<number, Promise<Target | null>>()
    await Promise.all(due.map(async d => { this.settled.push(await this.attempt(d, targets, held.signal)) }))
  }

  /** Outcomes got and not yet written: they are written with the next claim, or at the stop. */
  get unwritten (): number {
    return this.settled.length
  }

  /** After the batch in flight: its outcomes are written before this resolves. */
  async stop (): Promise<void> {
    if (this.settled.length > 0) await this.settle(null, 0)
    this.agents.http.destroy()
    this.agents.https.destroy()
  }

  /**
   * One unit of work: writes the outcomes of the last batch, then (unless stopping) claims the
   * next. Outcomes wait for the next claim rather than each taking a commit of its own: on SQLite
   * a commit is a sync of the log, and a batch's worth of them cost more than its requests did.
   * Until written, a delivery is held by its lease; an instance that dies first leaves it to be
   * sent again when the lease ends (at least once, the same `webhook-id`).
   */
  private async settle (now: Date | null, leaseMs: number): Promise<WebhookDelivery[]> {
    const outcomes = this.settled.splice(0)
    let due: WebhookDelivery[]
    try {
      due = await this.opts.store.transaction(async uow => {
        await this.record(uow, outcomes)
        if (now === null) return []
        return await uow.webhooks.claimDue(now, leaseMs, BATCH)
      })
    } catch (err) {
      // Written with the next try (the loop backs off while the store fails).
      this.settled.unshift(...outcomes)
      throw err
    }
    for (const o of outcomes) this.report(o)
    return due
  }

  /** The outcomes' writes: deliveries done in one statement per status, the rest one by one; then the subscriptions' runs. */
  private async record (uow: UnitOfWork, outcomes: readonly Outcome[]): Promise<void> {
    if (outcomes.length === 0) return
    const now = this.opts.clock.now()
    const done = new Map<number, string[]>()
    for (const o of outcomes) {
      if (o.kind === 'delivered') {
        const ids = done.get(o.status)
        if (ids === undefined) done.set(o.status, [o.d.id])
        else ids.push(o.d.id)
      } else if (o.kind === 'handedBack') await uow.webhooks.handBack(o.d.id, o.error, now)
      else await uow.webhooks.failedAttempt(o.d.id, o.error, o.kind === 'retry' ? o.at : null, now, o.status)
    }
    for (const [status, ids] of done) await uow.webhooks.delivered(ids, now, status)
    if (this.subscriptions === null) return
    // A subscription's deliveries that ended, in event order: a run of successes is told once, by
    // its last (whether the next one of the subscription was delivered is known walking backwards).
    const ended = outcomes.filter(o => o.d.webhookId !== null && (o.kind === 'delivered' || o.kind === 'failed'))
      .sort((a, b) => (a.d.eventId ?? 0) - (b.d.eventId ?? 0))
    const nextDelivered = new Map<number, boolean>()
    const told: { webhookId: number, delivered: boolean }[] = []
    for (let i = ended.length - 1; i >= 0; i--) {
      const webhookId = ended[i]!.d.webhookId!
      const delivered = ended[i]!.kind === 'delivered'
      if (!(delivered && nextDelivered.get(webhookId) === true)) told.push({ webhookId, delivered })
      nextDelivered.set(webhookId, delivered)
    }
    for (const t of told.reverse()) await this.subscriptions.ended(uow, t.webhookId, t.delivered)
  }

  /** Metrics and the log line of an outcome, once written. */
  private report (o: Outcome): void {
    if (o.kind === 'dropped') return
    // The delivery's fields in each line, not a child logger per delivery (which costs its bindings
    // even when the level is off).
    const fields = { webhook_delivery: o.d.id, export_id: o.d.exportId, subscription_id: o.d.webhookId, event_id: o.d.eventId, attempt: o.d.attempts }
    // Not an attempt: neither counted nor a failure.
    if (o.kind === 'handedBack') {
      this.opts.log.info(fields, 'webhook attempt cut by the stop; handed back')
      return
    }
    this.opts.attempts.inc({ outcome: o.kind })
    if (o.kind === 'delivered') this.opts.log.info({ ...fields, status: o.status }, 'webhook delivered')
    else if (o.kind === 'retry') {
      this.nextRetry = Math.min(this.nextRetry, o.at.getTime())
      this.opts.log.warn({ ...fields, error: o.error, retry_at: o.at.toISOString() }, 'webhook attempt failed; it will be retried')
    } else this.opts.log.error({ ...fields, error: o.error }, 'webhook given up after its last attempt')
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
        : subscriptions.target(d.webhookId).then(t => t === null ? null : { url: t.url, signers: t.secrets.map(s => new WebhookSigner(s)) })
      targets.set(d.webhookId, target)
    }
    const t = await target
    return t === null ? null : { ...t, messageId: String(d.eventId ?? d.id) }
  }

  /** One attempt; what it got is written later (see settle). */
  private async attempt (d: WebhookDelivery, targets: Map<number, Promise<Target | null>>, stopping: AbortSignal): Promise<Outcome> {
    let error: string
    let status: number | null = null
    try {
      const target = await this.targetOf(d, targets)
      const payload = d.payload
      // Retention keeps every event a delivery refers to; a missing body is a guard, not a path.
      if (payload === null) return { kind: 'dropped', d, error: 'The event is gone: past its retention.' }
      // Deleted (its deliveries went with it) or disabled since the delivery was made.
      if (target === null) return { kind: 'dropped', d, error: 'The subscription was disabled or deleted.' }
      status = await this.post(payload, target, stopping)
      if (status >= 200 && status < 300) return { kind: 'delivered', d, status }
      error = status >= 300 && status < 400 ? `the receiver answered ${status}; redirects are not followed` : `the receiver answered ${status}`
    } catch (err) {
      // Cut by this instance's stop, not by the receiver: handed back uncounted, so a stop during a
      // delivery's last attempt does not fail it (it is sent again, the same webhook-id).
      if (stopping.aborted) return { kind: 'handedBack', d, error: 'the service stopped during the attempt' }
      error = ['TimeoutError', 'AbortError'].includes((err as Error).name) ? `no answer within ${this.opts.timeoutMs} ms` : String((err as Error).message ?? err)
    }
    return d.attempts < this.opts.maxAttempts
      ? { kind: 'retry', d, error, status, at: new Date(this.opts.clock.now().getTime() + retryDelay(d.attempts, this.opts.retryBaseMs)) }
      : { kind: 'failed', d, error, status }
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
    // The receiver checks the signature's timestamp against its own clock: the machine's time, always.
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
    const agent = url.protocol === 'https:' ? this.agents.https : this.agents.http
    // The attempt's deadline, and a shutdown (which does not wait for a slow receiver: the attempt
    // is retried, from any instance): each destroys the request, or the answer once it has come (a
    // receiver that stalls its body is cut too). A plain timer, not an AbortSignal per attempt:
    // Node may garbage-collect a timeout signal held only by a composite one before it fires
    // (nodejs/node#57736), and a signal per attempt is garbage by the thousand a second.
    const attempt: Attempt = { req: null, res: null, reason: null }
    const cut = (reason: Error) => {
      attempt.reason ??= reason
      attempt.req?.destroy(attempt.reason)
      attempt.res?.destroy(attempt.reason)
    }
    const timer = setTimeout(() => { cut(new DOMException(`no answer within ${this.opts.timeoutMs} ms`, 'TimeoutError')) }, this.opts.timeoutMs)
    const stop = () => { cut(stopping.reason instanceof Error ? stopping.reason : new DOMException('the service is stopping', 'AbortError')) }
    const done = () => {
      clearTimeout(timer)
      stopping.removeEventListener('abort', stop)
    }
    stopping.addEventListener('abort', stop, { once: true })
    if (stopping.aborted) stop()
    let res: http.IncomingMessage
    try {
      try {
        res = await this.send(agent, url, headers, body, attempt)
      } catch (err) {
        // A kept-alive connection the receiver closed as it was reused: once more, on a new one.
        if ((err as SendError).reusedSocket !== true || (err as SendError).code !== 'ECONNRESET' || attempt.reason !== null) throw err
        res = await this.send(agent, url, headers, body, attempt)
      }
    } catch (err) {
      done()
      throw attempt.reason ?? err
    }
    attempt.res = res
    // Only the status matters. A short answer is read (and dropped) so that the connection can
    // carry the next delivery; past ANSWER_CAP it is closed instead (a receiver sending megabytes
    // costs nothing more).
    let read = 0
    res.on('data', (chunk: Buffer) => {
      read += chunk.length
      if (read > ANSWER_CAP) res.destroy()
    })
    // The status is known: whatever becomes of the body is no concern of the attempt.
    res.on('error', () => {})
    res.once('close', done)
    return res.statusCode ?? 0
  }

  /** Sends the request; resolves with the answer once its head has come. */
  private async send (agent: http.Agent, url: URL, headers: http.OutgoingHttpHeaders, body: Buffer, attempt: Attempt): Promise<http.IncomingMessage> {
    return await new Promise((resolve, reject) => {
      const req = (url.protocol === 'https:' ? https : http).request(url, {
        method: 'POST',
        headers,
        agent,
        lookup: guardedLookup(this.opts.allowLoopback) as never,
        // Node's http.request never follows a redirect: a 3xx is an answer like any other (a failure).
      }, resolve)
      attempt.req = req
      req.on('error', err => { reject(Object.assign(err, { reusedSocket: req.reusedSocket })) })
      if (attempt.reason !== null) req.destroy(attempt.reason)
      else req.end(body)
    })
  }
}
