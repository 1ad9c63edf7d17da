import { type ChildProcess, spawn } from 'node:child_process'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { SignJWT } from 'jose'
import { freePort, JWT_SECRET } from './helper.ts'
import { until } from './support/poll.ts'

/** Real service processes for tests that need more than one instance, or a crash. */
export const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..')
export const BIN = path.join(ROOT, 'bin', 'blog.js')

export async function token (sub: string, scopes: string[]): Promise<string> {
  return await new SignJWT({ scope: scopes.join(' ') }).setProtectedHeader({ alg: 'HS256' })
    .setSubject(sub).setIssuedAt().setExpirationTime('1h').sign(new TextEncoder().encode(JWT_SECRET))
}

/**
 * The settings every service process of a test starts with: its database, the tests' JWT secret,
 * no bootstrap key, quiet logs, and no shedding by wait (bursts on cold processes test crashes
 * and sharing, not load shedding); `extra` adds or overrides.
 */
export function processEnv (db: { url: string, dataDir?: string }, extra: Record<string, string> = {}): Record<string, string> {
  return {
    DATABASE_URL: db.url,
    ...(db.dataDir !== undefined ? { DATA_DIR: db.dataDir } : {}),
    AUTH_JWT_SECRET: JWT_SECRET,
    BOOTSTRAP_ADMIN_KEY: 'false',
    LOG_LEVEL: 'silent',
    OVERLOAD_MAX_WAIT_MS: '0',
    // No site unless a test asks for one (with a port of its own): instances would collide on 3001.
    SITE_PORT: '0',
    ...extra,
  }
}

export interface Instance {
  name: string
  base: string
  /** The metrics listener's origin (METRICS_PORT), apart from the API's. */
  metrics: string
  child: ChildProcess
  output: string[]
  exited: Promise<number | null>
}

/**
 * Starts a service process on a free port, its metrics on another, and waits until /readyz answers 200. It runs
 * `bin/blog.js serve` unless `command` says otherwise (a shell command line, run with `exec` so
 * that signals reach the service itself).
 */
export async function startInstance (name: string, env: Record<string, string>, command?: string): Promise<Instance> {
  const port = await freePort()
  const metricsPort = await freePort()
  const [cmd, args] = command === undefined ? [process.execPath, [BIN, 'serve']] : ['sh', ['-c', `exec ${command}`]]
  const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, METRICS_PORT: String(metricsPort), ...env, PORT: String(port), HOST: '127.0.0.1' }, stdio: ['ignore', 'pipe', 'pipe'] })
  const output: string[] = []
  child.stdout!.on('data', (d: Buffer) => output.push(d.toString()))
  child.stderr!.on('data', (d: Buffer) => output.push(d.toString()))
  const exited = new Promise<number | null>(resolve => child.once('exit', code => { resolve(code) }))
  const base = `http://127.0.0.1:${port}`
  const ready = async () => {
    if (child.exitCode !== null) throw new Error(`${name} exited with ${child.exitCode}:\n${output.join('')}`)
    try {
      return (await fetch(`${base}/readyz`)).status === 200
    } catch {
      return false
    }
  }
  await until(ready, `${name} to become ready`, 45_000, 100).catch((err: unknown) => {
    if (child.exitCode !== null) throw err
    // Not left running: a live child would keep the test process from ending.
    child.kill('SIGKILL')
    throw new Error(`${name} did not become ready:\n${output.join('')}`)
  })
  return { name, base, metrics: `http://127.0.0.1:${env.METRICS_PORT ?? metricsPort}`, child, output, exited }
}

export async function stop (i: Instance): Promise<number | null> {
  if (i.child.exitCode === null && i.child.signalCode === null) i.child.kill('SIGTERM')
  return await i.exited
}
