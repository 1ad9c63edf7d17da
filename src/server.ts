import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.ts'
import { type Config, ConfigError } from './config.ts'
import { generateApiKey } from './http/pipeline/auth.ts'
import { createContext } from './context.ts'
import { buildMetricsApp } from './http/pipeline/metrics.ts'
import { buildSite } from './site/site.ts'
import type { Store } from './store/store.ts'

const SHUTDOWN_GRACE_MS = 10_000

/**
 * First start with no credential configured: make one admin API key and print it once.
 * Only its hash is kept, so it cannot be shown again (make another with `keys create`).
 */
export async function bootstrapAdminKey (config: Config, store: Store): Promise<string | null> {
  const a = config.auth
  if (a.jwtSecret !== null || a.jwtPublicKey !== null || a.jwksUrl !== null) return null
  // "First start": no key was ever made. Revoking every key must not make the next start print a new one.
  if ((await store.apiKeys.list()).length > 0) return null
  const key = generateApiKey()
  try {
    await store.apiKeys.create({ id: key.id, name: 'admin', scopes: ['admin'], hash: key.hash }, new Date())
  } catch (err) {
    // Instances starting together on one database: the live-name index lets one of them win.
    if ((await store.apiKeys.list()).length > 0) return null
    throw err
  }
  return key.token
}

/**
 * The kernel's queue of connections not yet accepted (the kernel caps it at net.core.somaxconn,
 * 4096 on current Linux). At Node's default, 511, an open loop at 5x capacity that opens a
 * connection whenever its kept-alive ones are busy overflowed it: SYNs were dropped and retried
 * a second and three seconds later, and the answered p99 was 1.3-5.0 s in four runs. At 4096 the
 * loop accepts them at its pace and the admission queue serves or sheds their requests (a 503
 * within OVERLOAD_MAX_WAIT_MS): the p99 was 0.6-0.9 s in three runs of four, 1.9 s in the fourth
 * (`npm run bench:overload`, the same machine and hour).
 */
const LISTEN_BACKLOG = 4096

/** Listens on host:port; an address that cannot be had is as bad as a bad setting, and said the same way (one line, exit 2). */
async function listen (app: FastifyInstance, host: string, port: number, settings: { port: string, host: string }): Promise<void> {
  try {
    await app.listen({ port, host, backlog: LISTEN_BACKLOG })
  } catch (err) {
    const code = (err as { code?: string }).code
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      throw new ConfigError(code === 'EADDRINUSE' || code === 'EACCES' ? settings.port : settings.host, `cannot listen on ${host}:${port} (${code})`)
    }
    throw err
  }
}

/**
 * Opens the store, builds the app and listens, the reading site's listener unless SITE_PORT is 0,
 * and the metrics listener when METRICS_PORT is set; SIGTERM/SIGINT drain in-flight requests,
 * close the listeners and the store, exit 0. A theme that does not parse stops the start.
 */
export async function startServer (config: Config): Promise<{ app: FastifyInstance, store: Store, metrics: FastifyInstance | null, site: FastifyInstance | null }> {
  const context = await createContext(config)
  const store = context.store
  let app: FastifyInstance | null = null
  let site: FastifyInstance | null = null
  let metrics: FastifyInstance | null = null
  try {
    app = await buildApp(context)
    // Before any listener: a theme that does not parse stops the start with nothing served.
    if (config.site.port !== null) site = (await buildSite(context, app)).app
    metrics = config.metrics.port === null ? null : await buildMetricsApp(context.metrics, config.metrics, app.log)
    await listen(app, config.host, config.port, { port: 'PORT', host: 'HOST' })
    if (site !== null) await listen(site, config.host, config.site.port!, { port: 'SITE_PORT', host: 'HOST' })
    if (metrics !== null) await listen(metrics, config.metrics.host, config.metrics.port!, { port: 'METRICS_PORT', host: 'METRICS_HOST' })
  } catch (err) {
    await metrics?.close().catch(() => {})
    await site?.close().catch(() => {})
    await app?.close().catch(() => {})
    await store.close().catch(() => {})
    throw err
  }
  // Where to go, once everything listens: to the terminal, never to the log stream.
  process.stderr.write(`\nThe API: ${config.publicBaseUrl}/ (its reference at /docs), the editor: ${config.publicBaseUrl}/admin` +
    `${config.site.baseUrl === null ? '' : `, the site: ${config.site.baseUrl}/`}\n`)
  // Only once listening, so that a start that fails leaves no key that nobody saw.
  if (config.bootstrapAdminKey) {
    const token = await bootstrapAdminKey(config, store)
    if (token !== null) {
      // Printed once, to the terminal, never to the log stream.
      process.stderr.write(`\nNo credential was configured, so an admin API key was made. It is shown only now:\n\n  ${token}\n\nUse it as: Authorization: Bearer ${token}\n\n`)
    }
  }
  // While the blog has no owner, at every start: whatever LOG_LEVEL, whatever credentials.
  const identity = context.services.identity
  if (await identity.needsSetup()) {
    process.stdout.write(`\nThe blog has no owner yet. Open this link once to create the owner's account:\n\n  ${config.publicBaseUrl}/admin/setup#${identity.setupToken}\n\n`)
  }

  let closing = false
  const shutdown = (signal: string) => {
    if (closing) return
    closing = true
    app.log.info({ signal }, 'shutting down: finishing in-flight requests')
    // After the grace period, what still runs is answered 503 and its writes roll back, so the
    // drain still ends cleanly (exit 0); only a stuck close forces exit 1.
    const grace = setTimeout(() => {
      app.log.warn('in-flight requests did not finish in time; answering them 503')
      context.inFlight.abandonAll()
    }, SHUTDOWN_GRACE_MS)
    grace.unref()
    const force = setTimeout(() => {
      app.log.error('shutdown did not complete; exiting')
      process.exit(1)
    }, SHUTDOWN_GRACE_MS + 5000)
    force.unref()
    app.server.closeIdleConnections?.()
    site?.server.closeIdleConnections?.()
    // The site reads through the API's services: it closes first.
    Promise.resolve(site?.close())
      .then(async () => { await app.close() })
      // Scrapes go on while requests drain; the listener closes before the store.
      .then(async () => { await metrics?.close() })
      .then(async () => { await store.close() })
      .then(() => { process.exit(0) }, (err: unknown) => {
        app.log.error({ err }, 'shutdown failed')
        process.exit(1)
      })
  }
  process.once('SIGTERM', () => { shutdown('SIGTERM') })
  process.once('SIGINT', () => { shutdown('SIGINT') })
  return { app, store, metrics, site }
}
