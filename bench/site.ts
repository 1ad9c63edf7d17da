/**
 * The reading site's costs (part of `npm run bench`, or alone: `npm run bench:site`), on 10 000
 * posts of ~2 KB, the service as users start it (package.json's `start`, the site on its own
 * listener) and the bare ceiling (bench/bare-server.ts), each pinned to core 0, wrk on core 1:
 *   - a post's page and the home page, each asked again and again (page cache hits), against the
 *     bare ceiling's read of one post. Target: ≥ 0.5× on a hit, p99 ≤ 2× the ceiling's;
 *   - an uncached page: CPU time of the service per page over the first read of many posts' pages
 *     (each read once: each a miss, read from the store and rendered). Target: ≤ 2 ms;
 *   - the cache's memory after 10 000 distinct pages were read: what it counts it holds
 *     (public_cache_bytes, bounded by PUBLIC_CACHE_BYTES, 64 MiB by default; target ≤ 64 MiB), and
 *     the service's resident memory before and after, reported beside it.
 *
 *   npm run bench:site                       # 10 s per run, 2 rounds
 *   BENCH_SECONDS=3 BENCH_ROUNDS=1 npm run bench:site
 *
 * Needs wrk (Debian: `apt-get install -y wrk`), a build (`npm run build`), and to pin, taskset.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { seedBare } from './bare-server.ts'
import { cpuSeconds, pin } from './cores.ts'
import { freePort } from './net.ts'
import { quantile } from './photo.ts'
import { FILLER, POSTS, ROOT, seedSqlite } from './seed.ts'
import { SCRIPT, wrkSummary } from './wrk.ts'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 2)
/** Pages read once each for the uncached figure. */
const UNCACHED = 2000
/** Distinct pages read for the cache's memory. */
const DISTINCT = 10_000

function say (s: string): void {
  process.stdout.write(`${s}\n`)
}

interface Server { child: ChildProcess, port: number }

async function started (child: ChildProcess, url: string, what: string): Promise<void> {
  for (const began = Date.now(); Date.now() - began < 60_000; await sleep(20)) {
    try {
      if ((await fetch(url)).ok) return
    } catch {}
    if (child.exitCode !== null) break
  }
  child.kill()
  throw new Error(`${what} did not start`)
}

/** The service on `file`, its site on a port of its own; the site's port is returned. */
async function service (dir: string, file: string): Promise<Server & { api: number, metrics: number }> {
  const api = await freePort()
  const port = await freePort()
  const metrics = await freePort()
  const log = fs.openSync(path.join(dir, 'service.log'), 'w')
  const startScript = (JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
  const [cmd, args] = pin(0, 'sh', ['-c', `exec ${startScript}`])
  const child = spawn(cmd, args, {
    cwd: ROOT,
    env: { ...process.env, PORT: String(api), SITE_PORT: String(port), METRICS_PORT: String(metrics), DATABASE_URL: `sqlite:${file}`, DATA_DIR: dir, RATE_LIMIT_MAX: '1000000000', BOOTSTRAP_ADMIN_KEY: 'false' },
    stdio: ['ignore', log, log],
  })
  fs.closeSync(log)
  await started(child, `http://127.0.0.1:${port}/robots.txt`, 'the service\'s site')
  return { child, port, api, metrics }
}

/** A gauge's value as the service's metrics listener gives it. */
async function gauge (port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text()
  return Number(new RegExp(`^${name} ([0-9.e+]+)$`, 'm').exec(text)?.[1] ?? NaN)
}

async function bare (file: string): Promise<Server> {
  const port = await freePort()
  const [cmd, args] = pin(0, process.execPath, ['--import', 'tsx', path.join(ROOT, 'bench/bare-server.ts')])
  const child = spawn(cmd, args, { cwd: ROOT, env: { ...process.env, BENCH_DB: file, PORT: String(port) }, stdio: 'ignore' })
  await started(child, `http://127.0.0.1:${port}/posts/1`, 'the bare ceiling')
  return { child, port }
}

function wrk (port: number, mode: string[]): { rps: number, p99: number, errors: number } {
  const [cmd, args] = pin(1, 'wrk', ['-t1', '-c64', `-d${SECONDS}s`, '--timeout', '10s', '-s', SCRIPT, `http://127.0.0.1:${port}`, '--', ...mode])
  const s = wrkSummary(execFileSync(cmd, args, { encoding: 'utf8' }))
  return { rps: s.requests / s.seconds, p99: s.p99, errors: s.errors }
}

function rssMiB (pid: number): number {
  // The service runs under `sh -c exec …`: the pid is the node process itself.
  return Number(/VmRSS:\s+(\d+)/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'))?.[1] ?? 0) / 1024
}

async function readOnce (port: number, paths: readonly string[]): Promise<void> {
  for (const p of paths) {
    const res = await fetch(`http://127.0.0.1:${port}${p}`)
    if (res.status !== 200) throw new Error(`${p} answered ${res.status}`)
    await res.arrayBuffer()
  }
}

async function stop (s: Server): Promise<void> {
  if (s.child.exitCode !== null) return
  s.child.kill('SIGTERM')
  await new Promise(resolve => s.child.once('exit', resolve))
}

async function main (): Promise<void> {
  if (!fs.existsSync(path.join(ROOT, 'dist/blog.js'))) throw new Error('dist/ is missing: run npm run build first')
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-bench-site-'))
  const servers: Server[] = []
  try {
    seedSqlite(path.join(dir, 'service.db'), POSTS)
    seedBare(path.join(dir, 'bare.db'), POSTS, FILLER)
    const ceiling = await bare(path.join(dir, 'bare.db'))
    servers.push(ceiling)
    const svc = await service(dir, path.join(dir, 'service.db'))
    servers.push(svc)

    const runs: [string, Server, string[]][] = [
      ['bare ceiling: GET /posts/{id}', ceiling, ['read', String(POSTS)]],
      ['site: a post\'s page (kept)', svc, ['path', `/post-${POSTS / 2}`]],
      ['site: the home page (kept)', svc, ['path', '/']],
    ]
    const results = new Map<string, { rps: number, p99: number, errors: number }[]>(runs.map(([name]) => [name, []]))
    for (let round = 0; round < ROUNDS; round++) {
      for (const [name, server, mode] of runs) {
        wrk(server.port, mode) // warm-up
        results.get(name)!.push(wrk(server.port, mode))
      }
    }
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
    say('## The site: pages kept in the cache, against the bare ceiling\n')
    say(`${POSTS.toLocaleString('en')} posts of ~2 KB, ${SECONDS} s per run, ${ROUNDS} round(s) interleaved, wrk -t1 -c64; ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}, load average at the end ${os.loadavg().map(l => l.toFixed(1)).join(' ')}.\n`)
    say('| run | req/s by round | req/s (mean) | p99 ms (median) | errors | × bare ceiling |')
    say('|---|---|---:|---:|---:|---:|')
    const bareRps = mean(results.get(runs[0]![0])!.map(r => r.rps))
    const bareP99 = quantile(results.get(runs[0]![0])!.map(r => r.p99), 0.5)
    const verdicts: string[] = []
    for (const [name] of runs) {
      const r = results.get(name)!
      const rps = mean(r.map(x => x.rps))
      const p99 = quantile(r.map(x => x.p99), 0.5)
      say(`| ${name} | ${r.map(x => x.rps.toFixed(0)).join(', ')} | ${rps.toFixed(0)} | ${p99.toFixed(1)} | ${r.reduce((a, x) => a + x.errors, 0)} | ${(rps / bareRps).toFixed(2)} |`)
      if (name === runs[0]![0]) continue
      verdicts.push(`${name}: ${(rps / bareRps).toFixed(2)}× the bare ceiling's read (target ≥ 0.5: ${rps / bareRps >= 0.5 ? 'met' : 'NOT met'}); p99 ${(p99 / bareP99).toFixed(2)}× its p99 (target ≤ 2: ${p99 <= 2 * bareP99 ? 'met' : 'NOT met'})`)
    }
    say('')
    for (const v of verdicts) say(`- ${v}`)

    // Every page below is read for the first time: a miss, from the store, rendered.
    const before = cpuSeconds(svc.child.pid!)
    await readOnce(svc.port, Array.from({ length: UNCACHED }, (_, i) => `/post-${i + 1}`))
    const perPage = (cpuSeconds(svc.child.pid!) - before) * 1000 / UNCACHED
    say(`\n## The site: a page not kept\n\nThe service's CPU time over the first read of ${UNCACHED} posts' pages, one at a time: ${perPage.toFixed(2)} ms per page (target ≤ 2 ms: ${perPage <= 2 ? 'met' : 'NOT met'}).`)

    const rssBefore = rssMiB(svc.child.pid!)
    await readOnce(svc.port, Array.from({ length: DISTINCT }, (_, i) => `/post-${i + 1}`))
    const rssAfter = rssMiB(svc.child.pid!)
    const kept = await gauge(svc.metrics, 'public_cache_bytes') / 1024 / 1024
    const pages = await gauge(svc.metrics, 'public_cache_entries')
    say(`\n## The site: the cache's memory\n\nAfter ${DISTINCT.toLocaleString('en')} distinct pages were read, the public answers cache holds ${pages.toLocaleString('en')} pages in ${kept.toFixed(1)} MiB (target ≤ 64 MiB, bounded by PUBLIC_CACHE_BYTES: ${kept <= 64 ? 'met' : 'NOT met'}); resident memory ${rssBefore.toFixed(0)} → ${rssAfter.toFixed(0)} MiB (${(rssAfter - rssBefore).toFixed(0)} MiB more: the cache, the heap's room and SQLite's page cache after reading every post).`)
  } finally {
    for (const s of servers) await stop(s)
    fs.rmSync(dir, { recursive: true, force: true })
  }
}

await main()
