// Loaded into a service under measurement by bench/tail.ts (`node --import`), never by the service
// itself: the event loop's delay histogram, the collections (kind, count, pause) and the process's
// memory and CPU, over a window that SIGUSR2 closes. Each SIGUSR2 appends the window since the
// last one to TAIL_PROBE_OUT as one JSON line, then opens the next.
import fs from 'node:fs'
import http from 'node:http'
import v8 from 'node:v8'
import { monitorEventLoopDelay, PerformanceObserver, performance } from 'node:perf_hooks'

const out = process.env.TAIL_PROBE_OUT
if (out !== undefined && out !== '') {
  const KINDS = { 1: 'scavenge', 2: 'markCompact', 4: 'incremental', 8: 'weakCallbacks' }
  const delay = monitorEventLoopDelay({ resolution: 1 })
  delay.enable()
  let gcs = []
  new PerformanceObserver(list => {
    for (const e of list.getEntries()) gcs.push({ kind: KINDS[e.detail?.kind] ?? String(e.detail?.kind), ms: e.duration, at: e.startTime })
  }).observe({ entryTypes: ['gc'] })
  // From when the server read a request (its 'request' event, before any queue) to when its
  // answer was handed to the socket ('finish'): the server's whole part of the request's latency.
  let served = []
  const emit = http.Server.prototype.emit
  http.Server.prototype.emit = function (event, req, res) {
    if (event === 'request') {
      const t0 = performance.now()
      res.once('finish', () => { served.push(performance.now() - t0) })
    }
    return emit.apply(this, arguments)
  }
  let since = performance.now()
  let cpu = process.cpuUsage()
  let elu = performance.eventLoopUtilization()
  process.on('SIGUSR2', () => {
    const now = performance.now()
    const ms = q => delay.percentile(q) / 1e6
    const byKind = {}
    for (const g of gcs) {
      const k = (byKind[g.kind] ??= { count: 0, totalMs: 0, maxMs: 0, pauses: [] })
      k.count++
      k.totalMs += g.ms
      k.maxMs = Math.max(k.maxMs, g.ms)
      k.pauses.push(Math.round(g.ms * 100) / 100)
    }
    for (const k of Object.values(byKind)) k.pauses.sort((a, b) => b - a).splice(10)
    const used = process.cpuUsage(cpu)
    served.sort((a, b) => a - b)
    const at = q => served.length === 0 ? null : served[Math.min(served.length - 1, Math.floor(q * served.length))]
    fs.appendFileSync(out, JSON.stringify({
      seconds: (now - since) / 1000,
      loopDelay: { p50: ms(50), p90: ms(90), p99: ms(99), p999: ms(99.9), max: delay.max / 1e6, mean: delay.mean / 1e6, count: delay.count },
      served: { p50: at(0.5), p99: at(0.99), p999: at(0.999), max: served.at(-1) ?? null, n: served.length },
      utilization: performance.eventLoopUtilization(elu).utilization,
      gc: byKind,
      cpuSeconds: (used.user + used.system) / 1e6,
      memory: process.memoryUsage(),
      heapSpaces: Object.fromEntries(v8.getHeapSpaceStatistics().map(h => [h.space_name, { used: h.space_used_size, size: h.space_size }])),
    }) + '\n')
    delay.reset()
    gcs = []
    served = []
    since = now
    cpu = process.cpuUsage()
    elu = performance.eventLoopUtilization()
  })
}
