/**
 * Builds against each other, in one run (`npx tsx bench/ab.ts <checkout> <checkout> …`): each
 * checkout (built with `npm run build`, its dependencies installed) is started as its `npm start`
 * runs it, fresh for every round on its own copy of the 10 000 posts of `npm run bench` (seeded by
 * its own migrations), pinned to core 0, and driven by wrk (64 connections) pinned to core 1: 2 s
 * of warm-up, then the measured run. The order of the builds alternates from round to round.
 * Prints each round's req/s, p99 and the server's CPU per request, then each build's ratio to the
 * first, per round and as the mean. Only the service's own builds: no reference servers, so an A/B
 * of a change takes minutes, not the full bench's half hour.
 *
 *   npx tsx bench/ab.ts . ../before                                   # read one, create, 4 rounds of 5 s
 *   AB_SCENARIOS='create;mixed' AB_ROUNDS=6 AB_SECONDS=8 npx tsx bench/ab.ts . ../before ../other
 *
 * Scenarios (bench/wrk/scenario.lua): `read` (read one), `list` (list 20), `mixed` (90% GET /
 * 10% PUT), `create`.
 */
import { type ChildProcess, execFileSync, spawn } from 'node:child_process'
import fs from 'node:fs'
import os from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { cpuSeconds, pin } from './cores.ts'
import { freePort } from './net.ts'
import { POSTS, seedSqlite, SERVICE_ENV, writerToken } from './seed.ts'
import { SCRIPT, type WrkSummary, wrkSummary } from './wrk.ts'

const SCENARIOS = (process.env.AB_SCENARIOS ?? 'read;create').split(';').map(s => s.trim()).filter(Boolean)
const ROUNDS = Number(process.env.AB_ROUNDS ?? 4)
const SECONDS = Number(process.env.AB_SECONDS ?? 5)
const WARMUP_SECONDS = 2

interface Run { rps: number, p99: number, cpuUs: number, errors: number }

const token = await writerToken()

function wrkArgs (scenario: string): string[] {
  switch (scenario) {
    case 'read': return ['read', String(POSTS)]
    case 'list': return ['path', '/posts?limit=20']
    case 'mixed': return ['mixed', String(POSTS), token]
    case 'create': return ['create', token]
    default: throw new Error(`unknown scenario ${scenario} (read, list, mixed, create)`)
  }
}

function wrk (port: number, scenario: string, seconds: number): WrkSummary {
  const [cmd, args] = pin(1, 'wrk', ['-t1', '-c64', `-d${seconds}s`, '--timeout', '10s', '-s', SCRIPT, `http://127.0.0.1:${port}`, '--', ...wrkArgs(scenario)])
  return wrkSummary(execFileSync(cmd, args, { encoding: 'utf8' }))
}

async function measure (root: string, scenario: string, dir: string): Promise<Run> {
  const db = path.join(dir, 'posts.db')
  fs.rmSync(dir, { recursive: true, force: true })
  fs.mkdirSync(dir, { recursive: true })
  seedSqlite(db, POSTS, root)
  const port = await freePort()
  const start = (JSON.parse(fs.readFileSync(path.join(root, 'package.json'), 'utf8')) as { scripts: { start: string } }).scripts.start
  const [cmd, args] = pin(0, 'sh', ['-c', `exec ${start}`])
  const child: ChildProcess = spawn(cmd, args, {
    cwd: root,
    env: { ...process.env, PORT: String(port), DATABASE_URL: `sqlite:${db}`, DATA_DIR: dir, ...SERVICE_ENV },
    stdio: ['ignore', fs.openSync(path.join(dir, 'server.log'), 'w'), 'inherit'],
  })
  try {
    for (let i = 0; ; i++) {
      if (child.exitCode !== null) throw new Error(`${root} exited with ${child.exitCode} before answering /healthz`)
      if (i > 1500) throw new Error(`${root} did not answer /healthz within 30 s`)
      try { if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break } catch {}
      await sleep(20)
    }
    wrk(port, scenario, WARMUP_SECONDS)
    const cpu0 = cpuSeconds(child.pid!)
    const r = wrk(port, scenario, SECONDS)
    return { rps: r.requests / r.seconds, p99: r.p99, cpuUs: (cpuSeconds(child.pid!) - cpu0) * 1e6 / r.requests, errors: r.errors }
  } finally {
    child.kill('SIGTERM')
    if (child.exitCode === null) await new Promise(resolve => child.once('exit', resolve))
  }
}

const roots = process.argv.slice(2).map(r => path.resolve(r))
if (roots.length < 2) throw new Error('usage: npx tsx bench/ab.ts <checkout> <checkout> [...]: the first is compared with the others')
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'blog-ab-'))
const out: string[] = [`# bench/ab.ts — ${new Date().toISOString()}`,
  `${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, Node ${process.version}; ${ROUNDS} rounds × ${SECONDS} s (after ${WARMUP_SECONDS} s of warm-up), wrk -c64; load average at start ${os.loadavg().map(l => l.toFixed(1)).join(' ')}`]
try {
  for (const scenario of SCENARIOS) {
    const runs = roots.map(() => [] as Run[])
    for (let round = 0; round < ROUNDS; round++) {
      const order = roots.map((_, i) => i)
      if (round % 2 === 1) order.reverse()
      for (const i of order) {
        const r = await measure(roots[i]!, scenario, path.join(tmp, String(i)))
        runs[i]!.push(r)
        process.stderr.write(`${scenario} round ${round + 1} ${roots[i]}: ${r.rps.toFixed(0)} req/s, p99 ${r.p99.toFixed(1)} ms, ${r.cpuUs.toFixed(0)} µs CPU/req, ${r.errors} errors\n`)
      }
    }
    out.push('', `## ${scenario}`, '', '| build | req/s (mean) | ÷ the first, by round | ÷ the first (mean) | CPU µs/req (mean) | p99 ms (median) | errors |', '|---|---:|---|---:|---:|---:|---:|')
    const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length
    for (const [i, root] of roots.entries()) {
      const ratios = runs[i]!.map((r, k) => r.rps / runs[0]![k]!.rps)
      const p99s = runs[i]!.map(r => r.p99).sort((a, b) => a - b)
      out.push(`| ${path.relative(process.cwd(), root) || '.'} | ${mean(runs[i]!.map(r => r.rps)).toFixed(0)} | ${ratios.map(x => x.toFixed(2)).join(', ')} | ${mean(ratios).toFixed(2)} | ` +
        `${mean(runs[i]!.map(r => r.cpuUs)).toFixed(0)} | ${p99s[Math.floor(p99s.length / 2)]!.toFixed(1)} | ${runs[i]!.reduce((a, r) => a + r.errors, 0)} |`)
    }
  }
} finally {
  fs.rmSync(tmp, { recursive: true, force: true })
}
process.stdout.write(`${out.join('\n')}\n`)
