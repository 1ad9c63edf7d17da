import { createHash } from 'node:crypto'
import { Type } from '@sinclair/typebox'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import stringify from 'safe-stable-stringify'
import type { Clock } from '../../clock.ts'
import type { Config } from '../../config.ts'
import { AppError } from '../../errors.ts'
import type { Job } from '../../jobs/job.ts'
import type { IdempotencyScope, Store, StoredResponse, UnitOfWork } from '../../store/store.ts'

/** A key this request holds: its record is completed with the response, or released. */
interface Claim {
  readonly scope: IdempotencyScope
  readonly token: string
  done: boolean
}

/** The request's slot for the record its Idempotency-Key holds: this module's alone. */
const CLAIM = Symbol('idempotencyClaim')

declare module 'fastify' {
  interface FastifyRequest {
    /** Set when a POST carried an Idempotency-Key and now holds its record. */
    [CLAIM]: Claim | null
  }
}

/** 1–255 visible ASCII characters: no space, no control, nothing beyond 0x7E. */
const KEY = /^[\x21-\x7e]{1,255}$/

/** The replayed headers: those that describe the stored response, not this exchange. */
export const REPLAYED_HEADERS = ['content-type', 'location', 'etag', 'last-modified', 'cache-control', 'preference-applied'] as const

const SWEEP_INTERVAL_MS = 10 * 60_000

/**
 * What makes "the same request": its body as a JSON value (member order and white space do not
 * count) and the representation it asked for (version and media type), so a replay never answers
 * in another version than the one the client negotiated.
 */
export function requestFingerprint (apiVersion: number, mediaType: string, body: unknown): string {
  return createHash('sha256').update(`${apiVersion} ${mediaType}\n${stringify(body ?? null) ?? ''}`).digest('base64url')
}

function fingerprint (req: FastifyRequest): string {
  return requestFingerprint(req.apiVersion, req.responseMediaType, req.body)
}

const KEY_HEADER = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    minLength: 1,
    maxLength: 255,
    pattern: '^[\\x21-\\x7e]+$',
    description: 'Makes a retry safe: the same key and body within 24 h answer the first response again (`Idempotent-Replayed: true`) and create nothing. 1–255 visible ASCII characters, else 400 INVALID_IDEMPOTENCY_KEY; another body: 422 IDEMPOTENCY_KEY_REUSED; the first still running: 409 IDEMPOTENCY_KEY_IN_USE.',
  })),
})

/**
 * The OpenAPI document's view of a POST route: the Idempotency-Key header. Only documented (via
 * @fastify/swagger's `transform`), not validated by the schema, so a bad key is this plugin's 400.
 */
export function documentIdempotencyKey (method: string | string[], schema: Record<string, unknown>): Record<string, unknown> {
  if (!([method].flat().includes('POST')) || schema.headers !== undefined) return schema
  return { ...schema, headers: KEY_HEADER }
}

/**
 * Completes the request's claim inside the unit of work that makes its effect, so the effect and
 * the stored response commit together. A claim taken over meanwhile (the request outlived its
 * lock) rolls the effect back.
 */
export async function completeIdempotentWrite (req: FastifyRequest, uow: UnitOfWork, response: StoredResponse): Promise<void> {
  const claim = req[CLAIM]
  if (claim === null) return
  const stored: Record<string, string> = {}
  for (const name of REPLAYED_HEADERS) if (response.headers[name] !== undefined) stored[name] = response.headers[name]
  if (!await uow.idempotency.complete(claim.scope, claim.token, { ...response, headers: stored })) {
    throw new AppError('IDEMPOTENCY_KEY_IN_USE', 'Another request with this Idempotency-Key took over; nothing was changed.', { headers: { 'retry-after': '1' } })
  }
  uow.onCommit(() => { claim.done = true })
}

/**
 * Idempotency-Key on every POST (IETF httpapi idempotency-key draft; Stripe's
 * behaviour): a key is scoped to principal, method and path, and bound to a fingerprint of the
 * body. Only successful answers are stored and replayed; a request refused before its effect
 * (401, 403, 415, 422, …) or failing (5xx) releases the key, so the client can fix and retry.
 * Routes need no declaration: being a POST is enough.
 */
export const idempotencyPlugin = fp(async function idempotency (app: FastifyInstance, opts: { config: Config, store: Store, clock: Clock }) {
  const { store, clock } = opts
  const lockMs = opts.config.requestTimeoutMs + 5_000
  const ttlMs = opts.config.idempotencyTtlS * 1000
  const owner = opts.config.instanceId
  const leaseMs = opts.config.instanceLeaseMs
  app.decorateRequest(CLAIM, null)

  // Claims live by their owner's heartbeat lease: a crashed instance's claims are dead once it
  // lapses (INSTANCE_LEASE_MS), and an instance that starts frees its own name's at once, since
  // nothing of its own can be running yet. Renewed three times per lease, so one late beat is no loss.
  // The beats after the first are a job of this instance (idempotencyJobs), as is the sweep.
  app.addHook('onReady', async () => {
    try {
      const freed = await store.idempotency.releaseOwner(owner)
      if (freed > 0) app.log.info({ freed, instance: owner }, 'freed the Idempotency-Key claims a previous process of this instance left')
      await store.idempotency.heartbeat(owner, new Date(clock.now().getTime() + leaseMs))
    } catch (err) {
      app.log.warn({ err }, 'could not free this instance\'s old Idempotency-Key claims; they free themselves when their lease ends')
    }
  })
  app.addHook('onClose', async () => {
    // Every request has been answered or abandoned: none of this instance's claims is still needed.
    await store.idempotency.releaseOwner(owner).catch(() => {})
  })

  // Callback hooks that return at once on a request without the header (every read): an async
  // hook costs every request a promise and a turn of the microtask queue.
  // A malformed key is reported before the body is validated: it is wrong whatever the body.
  app.addHook('preValidation', (req, _reply, done) => {
    const raw = req.method === 'POST' ? req.headers['idempotency-key'] : undefined
    if (raw !== undefined && (typeof raw !== 'string' || !KEY.test(raw))) {
      done(new AppError('INVALID_IDEMPOTENCY_KEY', 'An Idempotency-Key must be one header of 1 to 255 visible ASCII characters (no spaces).'))
      return
    }
    done()
  })

  /** Claims the key; true when the request was answered here (a replay). */
  async function claimKey (req: FastifyRequest, reply: FastifyReply, raw: string): Promise<boolean> {
    const scope: IdempotencyScope = {
      principal: req.principal?.subject ?? '',
      method: req.method,
      path: (req.originalUrl ?? req.url).split('?')[0] ?? '/',
      key: raw,
    }
    const now = clock.now()
    const claim = await store.idempotency.claim(scope, fingerprint(req), now, { lockMs, ttlMs, owner })
    switch (claim.outcome) {
      case 'claimed':
        req[CLAIM] = { scope, token: claim.token, done: false }
        return false
      case 'reused':
        throw new AppError('IDEMPOTENCY_KEY_REUSED', 'This Idempotency-Key was already used with a different request body (or for another API version or media type). Use a new key for a new request.')
      case 'running': {
        const wait = Math.max(1, Math.ceil((claim.lockedUntil.getTime() - now.getTime()) / 1000))
        throw new AppError('IDEMPOTENCY_KEY_IN_USE', undefined, { headers: { 'retry-after': String(Math.min(wait, 5)) } })
      }
      case 'done': {
        const r = claim.response
        reply.code(r.status).headers(r.headers).header('idempotent-replayed', 'true')
        if (r.body === '') reply.send()
        else reply.send(r.body)
        return true
      }
    }
  }

  // After authentication and validation: a request refused by them never claims the key.
  app.addHook('preHandler', (req, reply, done) => {
    const raw = req.method === 'POST' ? req.headers['idempotency-key'] : undefined
    if (typeof raw !== 'string') {
      done()
      return
    }
    claimKey(req, reply, raw).then(answered => { if (!answered) done() }, (err: unknown) => { done(err as Error) })
  })

  // A claim whose request ended without a stored answer is let go, so the key can be retried.
  const release = (req: FastifyRequest, done: () => void) => {
    const claim = req[CLAIM]
    if (claim === null || claim.done) {
      done()
      return
    }
    claim.done = true
    store.idempotency.release(claim.scope, claim.token).catch((err: unknown) => {
      req.log.warn({ err }, 'could not release an Idempotency-Key; it frees itself when its lock ends')
    }).finally(done)
  }
  app.addHook('onResponse', (req, _reply, done) => { release(req, done) })
  app.addHook('onRequestAbort', release)
}, { name: 'idempotency', dependencies: ['problems'] })

/**
 * The Idempotency-Key records' background work: this instance's heartbeat lease, renewed three
 * times per INSTANCE_LEASE_MS on every instance (its claims live by it, whether it runs background
 * work or not), and the sweep of expired records, on the instances that run background work.
 */
export function idempotencyJobs (store: Store, config: Config, clock: Clock): Job[] {
  const leaseMs = config.instanceLeaseMs
  return [{
    name: 'idempotency-heartbeat',
    runsOn: 'instance',
    pollMs: Math.max(100, Math.floor(leaseMs / 3)),
    async tick () {
      await store.idempotency.heartbeat(config.instanceId, new Date(clock.now().getTime() + leaseMs))
      return false
    },
  }, {
    name: 'idempotency-sweep',
    pollMs: SWEEP_INTERVAL_MS,
    async tick () {
      await store.idempotency.sweep(clock.now())
      return false
    },
  }]
}
