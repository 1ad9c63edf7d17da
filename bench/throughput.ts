/**
 * Throughput benchmark (`npm run bench:throughput`): starts the real service as its own process
 * (SQLite by default, `BENCH_STORE=postgres` for PostgreSQL), pinned to one core when `taskset`
 * exists, seeds posts, and drives it with autocannon from this process over real sockets.
 * Prints requests/s, latency percentiles and the server's resident memory per scenario.
 *
 *   npm run bench:throughput                          # 10 s per scenario, 50 connections
 *   BENCH_SECONDS=30 BENCH_CONNECTIONS=100 npm run bench:throughput
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import autocannon from 'autocannon'
import { SignJWT } from 'jose'
import pg from 'pg'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50)
const KIND = process.env.BENCH_STORE === 'postgres' ? 'postgres' : 'sqlite'
const PORT = Number(process.env.BENCH_PORT ?? 3901)
const SECRET = 'bench-throughput-secret-bench-throughput!!'
const BASE = `http://127.0.0.1:${PORT}`

async function databaseUrl (dir: string): Promise<string> {
  if (KIND === 'sqlite') return `sqlite:${path.join(dir, 'blog.db')}`
  const admin = new pg.Client({ connectionString: 'postgres://postgres@127.0.0.1:5432/postgres' })
  await admin.connect()
  await admin.query('DROP DATABASE IF EXISTS blog_bench_throughput WITH (FORCE)')
  await admin.query('CREATE DATABASE blog_bench_throughput')
  await admin.end()
  return 'postgres://postgres@127.0.0.1:5432/blog_bench_throughput'
}

function rssMiB (pid: number): number {
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? 0) / 1024
}

async function start (env: Record<string, string>): Promise<ChildProcess> {
  const pinned = spawnSync('sh', ['-c', 'command -v taskset']).status === 0 && os.cpus().length > 1
  const cmd = pinned ? 'taskset' : process.execPath
  const args = pinned ? ['-c', '0', process.execPath, 'bin/blog.js', 'serve'] : ['bin/blog.js', 'serve']
  const child = spawn(cmd, args, { env: { ...process.env, ...env }, stdio: ['ignore', 'ignore', 'inherit'] })
  for (let i = 0; i < 100; i++) {
    try {
      if ((await fetch(`${BASE}/healthz`)).ok) return child
    } catch {}
    await new Promise(resolve => setTimeout(resolve, 100))
  }
  child.kill()
  throw new Error('the service did not start')
}

interface Row { name: string, rps: number, p50: number, p99: number, errors: number, non2xx: number, rss: number }

async function scenario (server: ChildProcess, name: string, opts: autocannon.Options): Promise<Row> {
  const result = await autocannon({ connections: CONNECTIONS, duration: SECONDS, ...opts, url: `${BASE}${opts.url ?? ''}` })
  return {
    name,
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + result.timeouts,
    non2xx: result.non2xx,
    rss: rssMiB(server.pid!),
  }
}

async function main (): Promise<void> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-throughput-'))
  const env = {
    DATABASE_URL: await databaseUrl(dir),
    DATA_DIR: dir,
    PORT: String(PORT),
    AUTH_JWT_SECRET: SECRET,
    RATE_LIMIT_MAX: '0',
    LOG_LEVEL: 'warn',
    BOOTSTRAP_ADMIN_KEY: 'false',
  }
  const server = await start(env)
  try {
    const token = await new SignJWT({ scope: 'posts:write' }).setProtectedHeader({ alg: 'HS256' }).setSubject('bench').setExpirationTime('1h').sign(new TextEncoder().encode(SECRET))
    const auth = { authorization: `Bearer ${token}`, 'content-type': 'application/json' }
    for (let i = 0; i < 1000; i++) {
      const res = await fetch(`${BASE}/posts`, { method: 'POST', headers: auth, body: JSON.stringify({ title: `Post ${i}`, content: `Body of post ${i} `.repeat(20) }) })
      if (res.status !== 201) throw new Error(`seeding: ${res.status}`)
    }
    const etag = (await fetch(`${BASE}/posts/500`)).headers.get('etag') ?? ''
    const idle = rssMiB(server.pid!)
    const rows: Row[] = [
      await scenario(server, 'GET /posts/{id}', { url: '/posts/500' }),
      await scenario(server, 'GET /posts/{id} If-None-Match → 304', { url: '/posts/500', headers: { 'if-none-match': etag } }),
      await scenario(server, 'GET /posts?limit=20 (cursor page 1)', { url: '/posts?limit=20' }),
      await scenario(server, 'GET /posts?limit=100&fields=…', { url: '/posts?limit=100&fields=id,title,status,created_at' }),
      await scenario(server, 'GET /posts/{id} gzip', { url: '/posts/500', headers: { 'accept-encoding': 'gzip' } }),
      await scenario(server, 'POST /posts (JWT)', { url: '/posts', method: 'POST', headers: auth, body: JSON.stringify({ title: 'Bench', content: 'x'.repeat(500) }) }),
    ]
    process.stdout.write(`\n${KIND}, ${CONNECTIONS} connections, ${SECONDS} s per scenario, server ${spawnSync('sh', ['-c', 'command -v taskset']).status === 0 ? 'pinned to core 0' : 'unpinned'}; idle RSS ${idle.toFixed(0)} MiB\n\n`)
    process.stdout.write('| scenario | req/s | p50 ms | p99 ms | errors | non-2xx | RSS MiB |\n|---|---:|---:|---:|---:|---:|---:|\n')
    for (const r of rows) {
      process.stdout.write(`| ${r.name} | ${r.rps.toFixed(0)} | ${r.p50} | ${r.p99} | ${r.errors} | ${r.non2xx} | ${r.rss.toFixed(0)} |\n`)
    }
    if (rows.some(r => r.errors > 0)) process.exitCode = 1
  } finally {
    server.kill('SIGTERM')
    await new Promise(resolve => server.once('exit', resolve))
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

await main()
