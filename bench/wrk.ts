import path from 'node:path'
import { ROOT } from './seed.ts'

/** The wrk script of every bench's scenarios (read, path, mixed, create); its done() prints one JSON line. */
export const SCRIPT = path.join(ROOT, 'bench/wrk/scenario.lua')

export interface WrkSummary {
  requests: number
  seconds: number
  p50: number
  p99: number
  errors: number
  errorKinds: { connect: number, read: number, write: number, status: number, timeout: number }
}

/** The summary line wrk's run printed (bench/wrk/scenario.lua), latencies in ms. */
export function wrkSummary (out: string): WrkSummary {
  const line = out.trim().split('\n').findLast(l => l.startsWith('{'))
  if (line === undefined) throw new Error(`wrk printed no summary:\n${out}`)
  const r = JSON.parse(line) as { requests: number, duration_us: number, p50_us: number, p99_us: number, connect: number, read: number, write: number, status: number, timeout: number }
  const errorKinds = { connect: r.connect, read: r.read, write: r.write, status: r.status, timeout: r.timeout }
  return { requests: r.requests, seconds: r.duration_us / 1e6, p50: r.p50_us / 1000, p99: r.p99_us / 1000, errors: r.connect + r.read + r.write + r.status + r.timeout, errorKinds }
}
