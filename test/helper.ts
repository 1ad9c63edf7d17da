import { randomBytes } from 'node:crypto'
import fs from 'node:fs'
import net from 'node:net'
import os from 'node:os'
import path from 'node:path'
import type { FastifyInstance, InjectOptions, LightMyRequestResponse } from 'fastify'
import { SignJWT } from 'jose'
import pg from 'pg'
import pino from 'pino'
import { buildApp } from '../src/app.ts'
import type { Clock } from '../src/clock.ts'
import type { Config } from '../src/config.ts'
import { generateApiKey } from '../src/http/pipeline/auth.ts'
import { buildMetricsApp } from '../src/http/pipeline/metrics.ts'
import { type Job, JobRunner } from '../src/jobs/job.ts'
import { type AppContext, createContext, loadConfig, openStore } from '../src/context.ts'
import type { Facility, Part, Resource } from '../src/http/contract/resources.ts'
import { FACILITIES, RESOURCES } from '../src/registry.ts'
import type { Store } from '../src/store/store.ts'
import { validateResponse } from './openapi-validator.ts'
import { closeWhenDone, once } from './support/hooks.ts'

export type StoreKind = 'sqlite' | 'postgres'

export const JWT_SECRET = 'test-secret-that-is-at-least-32-bytes-long!'
export const PG_ADMIN_URL = process.env.TEST_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
export const REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379'

/**
 * Whether the suite runs under CI (`CI=true`, `CI=1`, or any value but `0`/`false`): there, a
 * missing dependency (database, Redis, browser) is a failure, never a skip.
 */
export function underCI (): boolean {
  const v = (process.env.CI ?? '').trim().toLowerCase()
  return v !== '' && v !== '0' && v !== 'false'
}

/** Skips a test's reason outside CI; under CI the missing dependency fails the run instead. */
export function skipOutsideCI (missing: string | false): string | false {
  if (missing === false) return false
  if (underCI()) throw new Error(`CI is set but ${missing}`)
  process.stderr.write(`# ${missing}: skipped (set CI=true to make this a failure)\n`)
  return missing
}

let pgReachable: Promise<boolean> | undefined

/** Whether PostgreSQL answers; under CI an unreachable one is a failure, not a skip. */
export async function postgresAvailable (): Promise<boolean> {
  pgReachable ??= (async () => {
    const client = new pg.Client({ connectionString: PG_ADMIN_URL, connectionTimeoutMillis: 2000 })
    try {
      await client.connect()
      await client.query('select 1')
      return true
    } catch (err) {
      if (underCI()) throw new Error(`CI is set but PostgreSQL at ${PG_ADMIN_URL} is unreachable: ${String(err)}`)
      process.stderr.write(`# PostgreSQL at ${PG_ADMIN_URL} is unreachable: its tests are skipped (set CI=true to make this a failure)\n`)
      return false
    } finally {
      await client.end().catch(() => {})
    }
  })()
  return await pgReachable
}

let redisReachable: Promise<boolean> | undefined

/** Whether Redis answers at REDIS_URL; under CI an unreachable one is a failure, not a skip. */
export async function redisAvailable (): Promise<boolean> {
  redisReachable ??= (async () => {
    const { Redis } = await import('ioredis')
    const client = new Redis(REDIS_URL, { connectTimeout: 2000, maxRetriesPerRequest: 0, enableOfflineQueue: false, lazyConnect: true, retryStrategy: () => null })
    client.on('error', () => {})
    try {
      await client.connect()
      await client.ping()
      return true
    } catch (err) {
      if (underCI()) throw new Error(`CI is set but Redis at ${REDIS_URL} is unreachable: ${String(err)}`)
      process.stderr.write(`# Redis at ${REDIS_URL} is unreachable: its tests are skipped (set CI=true to make this a failure)\n`)
      return false
    } finally {
      client.disconnect()
    }
  })()
  return await redisReachable
}

/** The stores to run a suite against: SQLite always, PostgreSQL when reachable (always under CI). */
export async function storeKinds (): Promise<StoreKind[]> {
  return (await postgresAvailable()) ? ['sqlite', 'postgres'] : ['sqlite']
}

/** A fresh, empty database of the given kind; `drop` removes it. */
export async function freshDatabase (kind: StoreKind): Promise<{ url: string, dataDir: string, drop: () => Promise<void> }> {
  const dataDir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-test-'))
  if (kind === 'sqlite') {
    return {
      url: `sqlite:${path.join(dataDir, 'blog.db')}`,
      dataDir,
      drop: async () => { fs.rmSync(dataDir, { recursive: true, force: true }) },
    }
  }
  const name = `blog_test_${randomBytes(6).toString('hex')}`
  const admin = new pg.Client({ connectionString: PG_ADMIN_URL })
  await admin.connect()
  await admin.query(`CREATE DATABASE ${name}`)
  await admin.end()
  const url = new URL(PG_ADMIN_URL)
  url.pathname = `/${name}`
  return {
    url: url.toString(),
    dataDir,
    drop: async () => {
      const c = new pg.Client({ connectionString: PG_ADMIN_URL })
      await c.connect()
      await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`)
      await c.end()
      fs.rmSync(dataDir, { recursive: true, force: true })
    },
  }
}

export interface TestApp {
  app: FastifyInstance
  /** What the app was built from: its resources, store, metrics registry … */
  context: AppContext
  store: Store
  config: Config
  kind: StoreKind
  /** inject, and check the response against the OpenAPI document's schema for its route and status. */
  request (opts: InjectOptions): Promise<LightMyRequestResponse>
  /** A signed HS256 JWT for `sub` with these scopes, valid for an hour unless overridden. */
  token (sub: string, scopes?: string[], claims?: Record<string, unknown>): Promise<string>
  /** Authorization header value for a JWT of `sub` with these scopes. */
  auth (sub: string, scopes?: string[]): Promise<{ authorization: string }>
  /** Makes an API key in the store and returns its token. */
  apiKey (name: string, scopes: string[]): Promise<string>
  /** Scrapes the app's metrics as Prometheus would, from the metrics listener's app (not the API). */
  scrape (): Promise<string>
  /**
   * Resolves once every post written so far is in the full-text index, as the indexer job would
   * leave it (SQLite feeds it after the commit; PostgreSQL at once): for tests that search at once.
   */
  searchIndexed (): Promise<void>
  close (): Promise<void>
}

export interface TestAppOptions {
  /** Adds test-only routes or hooks before the app is ready. */
  extend?: (app: FastifyInstance) => void
  /** Points the store elsewhere (a proxy in front of) the fresh database. */
  url?: (freshUrl: string) => string
  /** The resources to serve instead of the registry's (a fixture resource beside them). */
  resources?: readonly Resource[]
  /** The facilities instead of the registry's (a fixture facility beside them). */
  facilities?: readonly Facility[]
  /** The clock the app's time-based rules read (a TestClock the test advances); the system's unless given. */
  clock?: Clock
  /** false: a fixture that builds the app (test/admin/browser.ts …) closes it, with what it made around it. */
  selfClosing?: boolean
}

/**
 * One more instance of the service on database `url` (another's fresh database: two instances
 * behind a load balancer), built as production builds it; close its app, then its store.
 */
export async function instanceOn (url: string, dataDir: string, env: Record<string, string> = {}): Promise<{ app: FastifyInstance, store: Store }> {
  const config = testConfig(url, dataDir, { RATE_LIMIT_MAX: '0', ...env })
  const store = await openStore(config)
  await store.migrate()
  const app = await buildApp(await createContext(config, { store }))
  await app.ready()
  return { app, store }
}

/** An Authorization header of an HS256 JWT for `sub`, valid for an hour, as every test app's settings accept it. */
export async function bearer (sub: string, scopes: string[] = ['posts:write']): Promise<string> {
  const iat = Math.floor(Date.now() / 1000)
  const jwt = await new SignJWT({ scope: scopes.join(' ') }).setProtectedHeader({ alg: 'HS256' }).setSubject(sub).setIssuedAt(iat).setExpirationTime(iat + 3600).sign(new TextEncoder().encode(JWT_SECRET))
  return `Bearer ${jwt}`
}

/**
 * Two instances of the service on one fresh database of `kind` (two instances behind a load
 * balancer), closed, with their database, when the test `c` ends.
 */
export async function twoInstances (c: { after: (fn: () => Promise<void>) => void }, kind: StoreKind, env: Record<string, string> = {}): Promise<{ a: FastifyInstance, b: FastifyInstance, store: Store }> {
  const db = await freshDatabase(kind)
  const a = await instanceOn(db.url, db.dataDir, env)
  const b = await instanceOn(db.url, db.dataDir, env)
  c.after(async () => {
    for (const i of [a, b]) await i.app.close()
    for (const i of [a, b]) await i.store.close()
    await db.drop()
  })
  return { a: a.app, b: b.app, store: a.store }
}

/** The settings of a test's app on database `url`: silent unless TEST_LOG is set, no bootstrap key, no shedding; `env` overrides. */
export function testConfig (url: string, dataDir: string, env: Record<string, string> = {}, parts?: readonly Part[]): Config {
  return loadConfig({
    DATABASE_URL: url,
    DATA_DIR: dataDir,
    AUTH_JWT_SECRET: JWT_SECRET,
    LOG_LEVEL: process.env.TEST_LOG ?? 'silent',
    BOOTSTRAP_ADMIN_KEY: 'false',
    // Load shedding measures the whole machine: on a busy shared test machine it would shed tests'
    // requests at random. The tests of shedding set these themselves.
    OVERLOAD_MAX_WAIT_MS: '0',
    // No site unless a test asks for one: it would listen on one port for every test.
    SITE_PORT: '0',
    ...env,
  }, parts)
}

/**
 * Builds the same app production builds (same options, a real store) on a fresh database.
 * `env` overrides settings; tests run silent unless TEST_LOG is set. It closes itself when what
 * built it ends (test/support/hooks.ts): the test, the suite whose `before` built it (that
 * `before` imported from test/support/hooks.ts), or the file. `close()` closes it earlier (a
 * restart); closing again does nothing.
 */
export async function buildTestApp (kind: StoreKind = 'sqlite', env: Record<string, string> = {}, opts: TestAppOptions = {}): Promise<TestApp> {
  const db = await freshDatabase(kind)
  const facilities = opts.facilities ?? FACILITIES
  const resources = opts.resources ?? RESOURCES
  const config = testConfig(opts.url ? opts.url(db.url) : db.url, db.dataDir, env, [...facilities, ...resources])
  const store = await openStore(config, [...facilities, ...resources])
  await store.migrate()
  const context = await createContext(config, { store, resources, facilities, ...(opts.clock ? { clock: opts.clock } : {}) })
  const app = await buildApp(context)
  opts.extend?.(app)
  await app.ready()
  // Every injected response, however a test makes it, is checked against the OpenAPI document.
  const inject = app.inject.bind(app) as (o: InjectOptions) => Promise<LightMyRequestResponse>
  const checkedInject = async (o: InjectOptions) => {
    const res = await inject(o)
    validateResponse(app, o, res)
    return res
  }
  Object.assign(app, { inject: checkedInject })
  const secret = new TextEncoder().encode(config.auth.jwtSecret ?? JWT_SECRET)
  let metricsApp: Promise<FastifyInstance> | undefined

  const t: TestApp = {
    app,
    context,
    store,
    config,
    kind,
    request: checkedInject,
    async token (sub, scopes = [], claims = {}) {
      // Issued by the app's clock, so a test that moves it on does not outrun its own tokens by accident.
      const iat = Math.floor(context.clock.now().getTime() / 1000)
      return await new SignJWT({ scope: scopes.join(' '), ...claims })
        .setProtectedHeader({ alg: 'HS256' })
        .setSubject(sub)
        .setIssuedAt(iat)
        .setExpirationTime(iat + 3600)
        .sign(secret)
    },
    async auth (sub, scopes = ['posts:write']) {
      return { authorization: `Bearer ${await t.token(sub, scopes)}` }
    },
    async apiKey (name, scopes) {
      const key = generateApiKey()
      await store.apiKeys.create({ id: key.id, name, scopes, hash: key.hash }, new Date())
      return key.token
    },
    async scrape () {
      metricsApp ??= buildMetricsApp(context.metrics, config.metrics)
      const res = await (await metricsApp).inject({ method: 'GET', url: '/metrics', headers: config.metrics.token === null ? {} : { authorization: `Bearer ${config.metrics.token}` } })
      if (res.statusCode !== 200) throw new Error(`GET /metrics answered ${res.statusCode}: ${res.body}`)
      return res.body
    },
    async searchIndexed () {
      while (await store.transaction(async uow => await uow.posts.indexSearch(100)) > 0);
    },
    close: once(async () => {
      await (await metricsApp)?.close()
      await app.close()
      // A test may have closed the store already, to see what the service does without it.
      await store.close().catch(() => {})
      await db.drop()
    }),
  }
  if (opts.selfClosing !== false) closeWhenDone(t.close)
  return t
}

/** A runner of `job` alone, as the app runs its jobs: `start()`, `wake(job.name)`, `stop()`. */
export function runnerOf (job: Job, log = pino({ level: process.env.TEST_LOG ?? 'silent' })): JobRunner {
  const runner = new JobRunner(log)
  runner.add(job)
  return runner
}

/** Ports this process has handed out already: the kernel may offer a just-closed port again. */
const givenPorts = new Set<number>()

/** A TCP port on 127.0.0.1 that nothing listens on now (bound, then released), never one this process was given before. */
export async function freePort (): Promise<number> {
  for (;;) {
    const server = net.createServer()
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    const { port } = server.address() as net.AddressInfo
    await new Promise<void>(resolve => server.close(() => { resolve() }))
    if (!givenPorts.has(port)) {
      givenPorts.add(port)
      return port
    }
  }
}

/** The JSON body of a response (fails the test when it is not JSON). */
export function json<T = any> (res: LightMyRequestResponse): T {
  return JSON.parse(res.body) as T
}
