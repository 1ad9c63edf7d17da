import net from 'node:net'

export interface RawResponse {
  status: number
  headers: Record<string, string>
  body: string
  /** Milliseconds from the first byte written to the connection's close. */
  closedAfterMs: number
}

/** Splits the first HTTP/1.1 response out of raw bytes (Content-Length framing only). */
export function parseRawResponse (text: string): Omit<RawResponse, 'closedAfterMs'> {
  const end = text.indexOf('\r\n\r\n')
  const head = end === -1 ? text : text.slice(0, end)
  const [statusLine = '', ...lines] = head.split('\r\n')
  const headers = Object.fromEntries(lines.map(l => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]))
  const rest = end === -1 ? '' : text.slice(end + 4)
  const length = headers['content-length'] === undefined ? rest.length : Number(headers['content-length'])
  return { status: Number(statusLine.split(' ')[1]), headers, body: rest.slice(0, length) }
}

/** Whether `bytes` hold a whole final response (not 1xx), framed by Content-Length or chunking. */
function completeResponse (bytes: Buffer, head: boolean): boolean {
  let text = bytes.toString('latin1')
  while (/^HTTP\/1\.[01] 1\d\d /.test(text) && text.includes('\r\n\r\n')) text = text.slice(text.indexOf('\r\n\r\n') + 4)
  const end = text.indexOf('\r\n\r\n')
  if (end === -1 || !text.startsWith('HTTP/')) return false
  // RFC 9112 §6.3: an answer to HEAD, a 204 and a 304 end with their headers (and carry no length).
  if (head || /^HTTP\/1\.[01] (204|304) /.test(text)) return true
  const length = /\r\ncontent-length: *(\d+)/i.exec(text.slice(0, end + 2))?.[1]
  if (length === undefined) return /\r\ntransfer-encoding: *chunked/i.test(text.slice(0, end)) ? text.endsWith('0\r\n\r\n') : false
  return text.length - end - 4 >= Number(length)
}

/**
 * Writes raw bytes (each string of `parts` after the one before, `gapMs` apart, for as long as the
 * connection is open) and reads until the server closes the connection (with `untilAnswer`, until
 * a whole answer has arrived), or rejects after `timeoutMs`.
 */
export async function rawRequest (port: number, parts: string | Buffer | (string | Buffer)[], opts: { gapMs?: number, timeoutMs?: number, untilAnswer?: boolean } = {}): Promise<RawResponse> {
  const chunks = [parts].flat()
  const started = performance.now()
  const text = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1')
    const received: Buffer[] = []
    let timer: NodeJS.Timeout | undefined
    socket.setTimeout(opts.timeoutMs ?? 5000, () => {
      socket.destroy()
      reject(new Error(`the server neither closed the connection nor stopped within ${opts.timeoutMs ?? 5000} ms; got ${JSON.stringify(Buffer.concat(received).toString('latin1').slice(0, 300))}`))
    })
    const head = String(chunks[0] ?? '').startsWith('HEAD ')
    socket.on('data', c => {
      received.push(c)
      // A kept-alive connection would stay open: the answer is all that is wanted.
      if (opts.untilAnswer === true && completeResponse(Buffer.concat(received), head)) socket.destroy()
    })
    socket.on('close', () => {
      clearTimeout(timer)
      resolve(Buffer.concat(received).toString('utf8'))
    })
    socket.on('error', () => {})
    let i = 0
    const next = () => {
      if (socket.destroyed || i >= chunks.length) return
      socket.write(chunks[i++]!)
      timer = setTimeout(next, opts.gapMs ?? 0)
    }
    socket.once('connect', next)
  })
  return { ...parseRawResponse(text), closedAfterMs: performance.now() - started }
}

const BURST_SCRIPT = `
const net = require('node:net')
const [port, n, request, timeoutMs] = [Number(process.argv[1]), Number(process.argv[2]), process.argv[3], Number(process.argv[4])]
const results = []
let left = n
for (let i = 0; i < n; i++) {
  const started = performance.now()
  const socket = net.connect(port, '127.0.0.1')
  const chunks = []
  let done = false
  const finish = (timedOut) => {
    if (done) return
    done = true
    const text = Buffer.concat(chunks).toString('utf8')
    results.push({ text, ms: performance.now() - started, timedOut })
    if (--left === 0) process.stdout.write(JSON.stringify(results))
  }
  socket.setTimeout(timeoutMs, () => { socket.destroy(); finish(true) })
  socket.on('data', c => chunks.push(c))
  socket.on('close', () => finish(false))
  socket.on('error', () => {})
  socket.on('connect', () => socket.write(request))
}
`

/**
 * Sends `n` copies of a raw request at once, each on its own connection, from another process
 * (so that the clients do not share the server's event loop), and returns every answer with the
 * time it took, or `timedOut` when none came within `timeoutMs`.
 */
export async function rawBurst (port: number, n: number, request: string, timeoutMs = 10_000): Promise<(RawResponse & { timedOut: boolean })[]> {
  const { execFile } = await import('node:child_process')
  const out = await new Promise<string>((resolve, reject) => {
    execFile(process.execPath, ['-e', BURST_SCRIPT, String(port), String(n), request, String(timeoutMs)], { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
      if (err) reject(err)
      else resolve(stdout)
    })
  })
  return (JSON.parse(out) as { text: string, ms: number, timedOut: boolean }[]).map(r => ({ ...parseRawResponse(r.text), closedAfterMs: r.ms, timedOut: r.timedOut }))
}

const CLOSED_LOOP_SCRIPT = `
const http = require('node:http')
const [port, connections, durationMs, path, fresh] = [Number(process.argv[1]), Number(process.argv[2]), Number(process.argv[3]), process.argv[4], process.argv[5] === 'fresh']
const agent = fresh ? false : new http.Agent({ keepAlive: true, maxSockets: connections })
const statuses = {}
const times = {}
let slowest = 0
const end = performance.now() + durationMs
const one = () => new Promise(resolve => {
  const started = performance.now()
  const req = http.get({ host: '127.0.0.1', port, path, agent, headers: fresh ? { connection: 'close' } : {} }, res => {
    res.resume()
    res.on('end', () => {
      const ms = performance.now() - started
      statuses[res.statusCode] = (statuses[res.statusCode] ?? 0) + 1
      ;(times[res.statusCode] ??= []).push(ms)
      slowest = Math.max(slowest, ms)
      resolve()
    })
  })
  req.on('error', () => { statuses.error = (statuses.error ?? 0) + 1; resolve() })
})
const worker = async () => { while (performance.now() < end) await one() }
Promise.all(Array.from({ length: connections }, worker)).then(() => {
  if (agent) agent.destroy()
  process.stdout.write(JSON.stringify({ statuses, times, slowest }))
})
`

// The same closed loop as a benchmark client (wrk) makes it: every connection opened at once, each
// sending its first request the moment it connects and its next the moment an answer is complete.
const RAW_CLOSED_LOOP_SCRIPT = `
const net = require('node:net')
const [port, connections, durationMs, path] = [Number(process.argv[1]), Number(process.argv[2]), Number(process.argv[3]), process.argv[4]]
const request = 'GET ' + path + ' HTTP/1.1\\r\\nHost: x\\r\\n\\r\\n'
const statuses = {}
const times = {}
let slowest = 0
let open = connections
const end = performance.now() + durationMs
for (let i = 0; i < connections; i++) {
  const socket = net.connect(port, '127.0.0.1')
  let buffered = Buffer.alloc(0)
  let started = 0
  const send = () => { started = performance.now(); socket.write(request) }
  socket.on('connect', send)
  socket.on('data', chunk => {
    buffered = Buffer.concat([buffered, chunk])
    for (;;) {
      const head = buffered.indexOf('\\r\\n\\r\\n')
      if (head === -1) return
      const text = buffered.subarray(0, head).toString('latin1')
      const length = Number(/content-length: *(\\d+)/i.exec(text)?.[1] ?? 0)
      if (buffered.length < head + 4 + length) return
      buffered = buffered.subarray(head + 4 + length)
      const status = text.slice(9, 12)
      const ms = performance.now() - started
      statuses[status] = (statuses[status] ?? 0) + 1
      ;(times[status] ??= []).push(ms)
      slowest = Math.max(slowest, ms)
      if (performance.now() < end && !/connection: *close/i.test(text)) send()
      else socket.end()
    }
  })
  socket.on('error', () => { statuses.error = (statuses.error ?? 0) + 1 })
  socket.on('close', () => { if (--open === 0) process.stdout.write(JSON.stringify({ statuses, times, slowest })) })
}
`

export interface ClosedLoopResult {
  /** How many answers had each status. */
  statuses: Record<string, number>
  /** Each answer's time in ms, by status, in the order they came. */
  times: Record<string, number[]>
  /** The slowest answer's time in ms, any status. */
  slowest: number
}

/**
 * Steady closed-loop load, as a benchmark client makes it: `connections` keep-alive connections
 * (with `fresh`, a new connection for every request), each sending its next GET `path` as soon as
 * the last is answered, for `durationMs`, from another process. With `raw`, as wrk makes it: every
 * connection opened at once and its first request sent the moment it connects (Node's agent
 * spreads its connections out). Returns how many answers had each
 * status, each answer's time by status, and the slowest answer's time.
 */
export async function closedLoop (port: number, connections: number, durationMs: number, path: string, opts: { fresh?: boolean, raw?: boolean } = {}): Promise<ClosedLoopResult> {
  const { execFile } = await import('node:child_process')
  const script = opts.raw === true ? RAW_CLOSED_LOOP_SCRIPT : CLOSED_LOOP_SCRIPT
  return await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', script, String(port), String(connections), String(durationMs), path, opts.fresh === true ? 'fresh' : 'kept'], (err, stdout) => {
      if (err) reject(err)
      else resolve(JSON.parse(stdout) as ClosedLoopResult)
    })
  })
}

const OPEN_LOOP_SCRIPT = `
const http = require('node:http')
const [port, rate, durationMs, path, timeoutMs] = [Number(process.argv[1]), Number(process.argv[2]), Number(process.argv[3]), process.argv[4], Number(process.argv[5])]
// As an open-loop load tool sends (k6's constant arrival rate): a request every 1/rate s whether
// or not the earlier ones were answered, on a free kept-alive connection or a new one.
const agent = new http.Agent({ keepAlive: true, maxSockets: Infinity })
const statuses = {}
const times = {}
let timedOut = 0
let left = Math.round(rate * durationMs / 1000)
const total = left
const start = performance.now()
const pending = []
for (let i = 0; i < total; i++) {
  pending.push(new Promise(resolve => {
    setTimeout(() => {
      const started = performance.now()
      const req = http.get({ host: '127.0.0.1', port, path, agent, timeout: timeoutMs }, res => {
        res.resume()
        res.on('end', () => {
          const s = String(res.statusCode)
          statuses[s] = (statuses[s] ?? 0) + 1
          ;(times[s] ??= []).push(performance.now() - started)
          resolve()
        })
      })
      req.on('timeout', () => { timedOut++; req.destroy() })
      req.on('error', () => { resolve() })
    }, Math.max(0, start + i * 1000 / rate - performance.now()))
  }))
}
Promise.all(pending).then(() => {
  agent.destroy()
  process.stdout.write(JSON.stringify({ statuses, times, timedOut, sent: total }))
})
`

export interface OpenLoopResult {
  /** How many answers had each status. */
  statuses: Record<string, number>
  /** Each answer's time in ms, by status. */
  times: Record<string, number[]>
  /** Requests that got no answer within the client's timeout. */
  timedOut: number
  sent: number
}

/**
 * Open-loop load: GET `path` at `rate` requests per second for `durationMs`, whether or not the
 * earlier ones were answered (on a free kept-alive connection, else a new one), from another
 * process; a request not answered within `timeoutMs` counts as timed out.
 */
export async function openLoop (port: number, rate: number, durationMs: number, path: string, timeoutMs = 10_000): Promise<OpenLoopResult> {
  const { execFile } = await import('node:child_process')
  return await new Promise((resolve, reject) => {
    execFile(process.execPath, ['-e', OPEN_LOOP_SCRIPT, String(port), String(rate), String(durationMs), path, String(timeoutMs)], { maxBuffer: 64 * 1024 * 1024 }, (err, stdout) => {
      if (err) reject(err)
      else resolve(JSON.parse(stdout) as OpenLoopResult)
    })
  })
}

/** The `q`-quantile (0–1) of `values` (nearest rank); 0 for none. */
export function quantile (values: readonly number[], q: number): number {
  if (values.length === 0) return 0
  const sorted = [...values].sort((a, b) => a - b)
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)]!
}
