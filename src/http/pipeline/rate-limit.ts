import rateLimit from '@fastify/rate-limit'
import type { FastifyBaseLogger, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import fp from 'fastify-plugin'
import type { Redis } from 'ioredis'
import type { Config } from '../../config.ts'
import { AppError } from '../../errors.ts'
import { routeOf } from '../protocol/route.ts'

/** The policy's name in RateLimit-Policy and RateLimit. */
const POLICY = 'default'
/** Probes from the platform are not clients: they are never limited (metrics have a listener of their own). */
const EXEMPT_ROUTES = new Set(['/healthz', '/readyz'])
const LOCAL_KEYS = 50_000
/** After Redis failed or timed out, it is left alone this long: one request pays a timeout, not every one. */
const BREAKER_OPEN_MS = 5_000

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * What the route's requests are counted by, instead of the principal or address: a route
     * reached by a secret in its URL (a capability) counts per secret. Return a digest, never the
     * secret itself: the key may be stored in Redis.
     */
    rateLimitKey?: (req: FastifyRequest) => string
  }
}

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

/**
 * Counts in Redis while it answers, else in this process's memory: the plugin's Redis store (its
 * Lua script) and its in-memory store, each a limiter. A Redis outage therefore never fails or
 * delays a request (every command fails fast: no offline queue, no retries, short timeouts, and
 * after a failure Redis is left alone for BREAKER_OPEN_MS); the limit only becomes per instance
 * until Redis is back.
 */
async function fallbackLimiter (app: FastifyInstance, redis: Redis | null, shared: LimiterOptions, prefix: string, log: FastifyBaseLogger): Promise<Limiter> {
  const local = await limiter(app, { ...shared, cache: LOCAL_KEYS })
  if (redis === null) return local
  const remote = await limiter(app, { ...shared, redis, nameSpace: prefix, skipOnError: false })
  let warned = false
  let openUntil = 0
  return async (req, callOptions) => {
    if (redis.status !== 'ready' || Date.now() < openUntil) return await local(req, callOptions)
    try {
      const r = await remote(req, callOptions)
      warned = false
      return r
    } catch (err) {
      // A Redis that holds the connection but never answers would otherwise cost every request
      // the command timeout; after it failed once, only one request every BREAKER_OPEN_MS tries it.
      openUntil = Date.now() + BREAKER_OPEN_MS
      if (!warned) log.warn({ err }, 'rate limit: Redis failed; counting in memory, per instance, until it answers')
      warned = true
      return await local(req, callOptions)
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
 * Rate limits: RATE_LIMIT_MAX requests per RATE_LIMIT_WINDOW_S per principal,
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

  const keyGenerator = (req: FastifyRequest) => {
    const routeKey = routeOf(req).config.rateLimitKey
    if (routeKey !== undefined) return `r:${routeKey(req)}`
    return req.principal !== null ? `p:${req.principal.subject}` : `a:${req.ip}`
  }
  const limit = await fallbackLimiter(app, redis, { max, timeWindow: windowS * 1000, keyGenerator }, `${opts.config.redisKeyPrefix}rl:`, log)
  const policy = policyHeader(max, windowS)

  app.addHook('onRequest', async (req: FastifyRequest, reply: FastifyReply) => {
    if (EXEMPT_ROUTES.has(routeOf(req).url ?? '')) return
    const r = await limit(req)
    if (r.isAllowed) return
    const resetS = r.ttlInSeconds > 0 ? r.ttlInSeconds : windowS
    reply.header('ratelimit-policy', policy)
    reply.header('ratelimit', limitHeader(r.remaining, resetS))
    if (r.isExceeded) {
      throw new AppError('RATE_LIMITED', `The limit of ${max} requests per ${windowS} s is used up. Retry in ${resetS} s.`, { headers: { 'retry-after': String(resetS) } })
    }
  })
}, { name: 'rate-limit', dependencies: ['auth'] })
