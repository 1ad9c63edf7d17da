import type { FastifyInstance } from 'fastify'
import { buildApp } from './app.ts'
import { type Config, ConfigError } from './config.ts'
import { generateApiKey } from './http/auth.ts'
import { openStore } from './context.ts'
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

/** Opens the store, builds the app and listens; SIGTERM/SIGINT drain in-flight requests, close the store, exit 0. */
export async function startServer (config: Config): Promise<{ app: FastifyInstance, store: Store }> {
  const store = await openStore(config)
  if (config.migrateOnStart) await store.migrate()
  const app = await buildApp({ config, store })
  try {
    await app.listen({ port: config.port, host: config.host })
  } catch (err) {
    await app.close().catch(() => {})
    await store.close().catch(() => {})
    const code = (err as { code?: string }).code
    // The address cannot be had: as bad as a bad setting, and said the same way (one line, exit 2).
    if (code === 'EADDRINUSE' || code === 'EACCES' || code === 'EADDRNOTAVAIL' || code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
      throw new ConfigError(code === 'EADDRINUSE' || code === 'EACCES' ? 'PORT' : 'HOST', `cannot listen on ${config.host}:${config.port} (${code})`)
    }
    throw err
  }
  // Only once listening, so that a start that fails leaves no key that nobody saw.
  if (config.bootstrapAdminKey) {
    const token = await bootstrapAdminKey(config, store)
    if (token !== null) {
      // Printed once, to the terminal, never to the log stream.
      process.stderr.write(`\nNo credential was configured, so an admin API key was made. It is shown only now:\n\n  ${token}\n\nUse it as: Authorization: Bearer ${token}\n\n`)
    }
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
      app.abandonInFlight()
    }, SHUTDOWN_GRACE_MS)
    grace.unref()
    const force = setTimeout(() => {
      app.log.error('shutdown did not complete; exiting')
      process.exit(1)
    }, SHUTDOWN_GRACE_MS + 5000)
    force.unref()
    app.server.closeIdleConnections?.()
    app.close()
      .then(async () => { await store.close() })
      .then(() => { process.exit(0) }, (err: unknown) => {
        app.log.error({ err }, 'shutdown failed')
        process.exit(1)
      })
  }
  process.once('SIGTERM', () => { shutdown('SIGTERM') })
  process.once('SIGINT', () => { shutdown('SIGINT') })
  return { app, store }
}
