import rateLimit from '@fastify/rate-limit'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import { LruMap } from 'toad-cache'
import type { Config } from '../config.ts'
import { AppError } from '../errors.ts'
import { routeOf } from './route.ts'

/** The policy's name in RateLimit-Policy and RateLimit. */
const POLICY = 'default'
/** Probes from the platform are not clients: they are never limited (metrics have a listener of their own). */
const EXEMPT_ROUTES = new Set(['/healthz', '/readyz'])
const LOCAL_KEYS = 50_000
/** After Redis failed or timed out, it is left alone this long: one request pays a timeout, not every one. */
const BREAKER_OPEN_MS = 5_000

type Limiter = ReturnType<FastifyInstance['createRateLimit']>
type LimiterOptions = Omit<Parameters<typeof rateLimit>[1], 'global'>

/**
 * A limiter of @fastify/rate-limit with its own store: the plugin registered in a scope of its
 * own (so two can live side by side), and the limiter it makes (`createRateLimit`, its public API).
 */
async function limiter (app: FastifyInstance, opts: LimiterOptions): Promise<Limiter> {
  let made: Limiter | null = null
  await app.register(async scope => {
    await scope.register(rateLimit, { ...opts, global: false })
    made = scope.createRateLimit()
  })
  return made!
}

/** One key's window in memory: requests counted since it started. */
interface Window { count: number, startedAt: number }

/**
 * The in-memory count: @fastify/rate-limit's rule (its LocalStore: a fixed window that starts at
 * a key's first request, `ttl` the time left of it), kept in the same LRU it uses (toad-cache),
 * counted synchronously. The library's limiter function costs every request an array, an object
 * from Fastify's `req.routeOptions` getter and four promises; this one allocates only a key's
 * first window. Principals and addresses have an LRU each, so neither key needs a prefix built
 * per request.
 */
class LocalWindows {
  private readonly principals = new LruMap<Window>(LOCAL_KEYS)
  private readonly addresses = new LruMap<Window>(LOCAL_KEYS)
  constructor (private readonly windowMs: number) {}

  /** Counts a request of `req`'s key; the window it counted in (live: read it before the next hit). */
  hit (req: FastifyRequest): Window {
    const lru = req.principal !== null ? this.principals : this.addresses
    const key = req.principal !== null ? req.principal.subject : req.ip
    const now = Date.now()
    let w = lru.get(key)
    if (w === undefined) {
      w = { count: 1, startedAt: now }
      lru.set(key, w)
    } else if (w.startedAt + this.windowMs <= now) {
      w.count = 1
      w.startedAt = now
    } else {
      w.count++
    }
    return w
  }

  /** Milliseconds left of window `w`. */
  left (w: Window): number {
    return this.windowMs - (Date.now() - w.startedAt)
  }
}

/**
 * Counts in Redis while it answers (the plugin's Redis store, its Lua script), else in this
 * process's memory (LocalWindows). A Redis outage therefore never fails or delays a request
 * (every command fails fast: no offline queue, no retries, short timeouts, and after a failure
 * Redis is left alone for BREAKER_OPEN_MS); the limit only becomes per instance until Redis is back.
 */
class SharedCount {
  private warned = false
  private openUntil = 0
  constructor (
    readonly local: LocalWindows,
    private readonly redis: Redis | null,
    private readonly remote: Limiter | null,
    private readonly log: FastifyBaseLogger
  ) {}

  /** Whether this request is counted in Redis (else in memory, synchronously). */
  shared (): boolean {
    return this.redis !== null && this.redis.status === 'ready' && Date.now() >= this.openUntil
  }

  /** The count in Redis, or null when Redis failed (then the request is counted in memory). */
  async inRedis (req: FastifyRequest): Promise<Awaited<ReturnType<Limiter>> | null> {
    try {
      const r = await this.remote!(req)
      this.warned = false
      return r
    } catch (err) {
      // A Redis that holds the connection but never answers would otherwise cost every request
      // the command timeout; after it failed once, only one request every BREAKER_OPEN_MS tries it.
      this.openUntil = Date.now() + BREAKER_OPEN_MS
      if (!this.warned) this.log.warn({ err }, 'rate limit: Redis failed; counting in memory, per instance, until it answers')
      this.warned = true
      return null
    }
  }
}

async function connectRedis (url: string, log: FastifyBaseLogger): Promise<Redis> {
  // Loaded only when configured: a tenth of the start-up time otherwise, for nothing.
  const { Redis } = await import('ioredis')
  const redis = new Redis(url, {
    connectTimeout: 1000,
    commandTimeout: 100,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    // Keep reconnecting in the background, at most every 5 s.
    retryStrategy: times => Math.min(times * 250, 5000),
  })
  let down = false
  redis.on('error', (err: Error) => {
    if (!down) log.warn({ err }, 'rate limit: Redis is unreachable; counting in memory until it answers')
    down = true
  })
  redis.on('ready', () => {
    if (down) log.info('rate limit: Redis answers again')
    down = false
  })
  return redis
}

/** Start-up waits briefly for Redis, so a healthy one counts from the first request on. */
async function firstContact (redis: Redis): Promise<void> {
  if (redis.status === 'ready') return
  await new Promise<void>(resolve => {
    const done = () => {
      clearTimeout(timer)
      redis.off('ready', done)
      redis.off('error', done)
      resolve()
    }
    const timer = setTimeout(done, 1500)
    redis.once('ready', done)
    redis.once('error', done)
  })
}

/** `RateLimit-Policy` (draft-ietf-httpapi-ratelimit-headers-09/-10, a Structured Fields list). */
export function policyHeader (max: number, windowS: number): string {
  return `"${POLICY}";q=${max};w=${windowS}`
}

/** `RateLimit`: the quota units left (`r`) and the seconds until the window resets (`t`). */
export function limitHeader (remaining: number, resetS: number): string {
  return `"${POLICY}";r=${remaining};t=${resetS}`
}

/**
 * Rate limits (contract §7): RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW_S per principal,
 * or per client address when anonymous; shared by every instance through Redis when REDIS_URL
 * is set. Runs between the auth plugin (which sets `req.principal`) and the authorization plugin,
 * so a request with a bad credential counts against its address before it gets its 401: guessing
 * tokens is throttled like anything else. Every limited response carries RateLimit-Policy
 * and RateLimit; the one past the limit is 429 RATE_LIMITED with Retry-After.
 */
export const rateLimitPlugin = fp(async function rateLimits (app: FastifyInstance, opts: { config: Pick<Config, 'rateLimit' | 'redisUrl' | 'redisKeyPrefix'> }) {
  const { max, windowS } = opts.config.rateLimit
  if (max === 0) return
  const log = app.log.child({ plugin: 'rate-limit' })
  const redis = opts.config.redisUrl === null ? null : await connectRedis(opts.config.redisUrl, log)
  if (redis !== null) await firstContact(redis)
  app.addHook('onClose', async () => {
    if (redis === null) return
    if (redis.status === 'ready') await redis.quit().catch(() => { redis.disconnect() })
    else redis.disconnect()
  })

  const keyGenerator = (req: FastifyRequest) => req.principal !== null ? `p:${req.principal.subject}` : `a:${req.ip}`
  const remote = redis === null
    ? null
    : await limiter(app, { max, timeWindow: windowS * 1000, keyGenerator, redis, nameSpace: `${opts.config.redisKeyPrefix}rl:`, skipOnError: false })
  const counter = new SharedCount(new LocalWindows(windowS * 1000), redis, remote, log)
  const policy = policyHeader(max, windowS)

  /** Sets the headers of a count; the error past the limit. `ttlS`: seconds left of the window. */
  function answer (reply: FastifyReply, remaining: number, ttlS: number, exceeded: boolean): AppError | undefined {
    const resetS = ttlS > 0 ? ttlS : windowS
    reply.header('ratelimit-policy', policy)
    reply.header('ratelimit', limitHeader(remaining, resetS))
    if (!exceeded) return undefined
    return new AppError('RATE_LIMITED', `The limit of ${max} requests per ${windowS} s is used up. Retry in ${resetS} s.`, { headers: { 'retry-after': String(resetS) } })
  }

  function inMemory (req: FastifyRequest, reply: FastifyReply): AppError | undefined {
    const w = counter.local.hit(req)
    return answer(reply, Math.max(0, max - w.count), Math.ceil(counter.local.left(w) / 1000), w.count > max)
  }

  // A callback hook: counting in memory needs no promise, and most requests count in memory.
  app.addHook('onRequest', (req: FastifyRequest, reply: FastifyReply, done: (err?: Error) => void) => {
    if (EXEMPT_ROUTES.has(routeOf(req).url ?? '')) {
      done()
      return
    }
    if (!counter.shared()) {
      done(inMemory(req, reply))
      return
    }
    counter.inRedis(req).then(r => {
      if (r === null) done(inMemory(req, reply))
      else done(r.isAllowed ? undefined : answer(reply, r.remaining, r.ttlInSeconds, r.isExceeded))
    }, done)
  })
}, { name: 'rate-limit', dependencies: ['auth'] })
