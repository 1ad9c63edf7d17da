import { type IncomingMessage, STATUS_CODES } from 'node:http'
import type { Socket } from 'node:net'
import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { instanceOf, rawProblem } from '../protocol/problems.ts'

/** Framing headers of the injected answer that the answer written on the socket sets itself. */
const FRAMING = new Set(['connection', 'transfer-encoding', 'content-length', 'keep-alive', 'date'])

/**
 * Requests Node answers itself unless told otherwise: an `Expect` other than 100-continue (Node
 * would send a bare 417) and CONNECT (Node would close the connection without a word). CONNECT
 * goes through the app like any request, so it gets what every other method gets on that path
 * (405 with Allow, 404), then the connection is closed: this service tunnels nothing.
 */
export const nodeRequestsPlugin = fp(async function nodeRequests (app: FastifyInstance) {
  app.server.on('checkExpectation', (req: IncomingMessage, res) => {
    const p = rawProblem('EXPECTATION_FAILED', req.url ?? '/', `Expect: ${String(req.headers.expect).slice(0, 100)} cannot be met; only 100-continue is supported.`)
    res.writeHead(p.status, p.headers)
    res.end(p.body)
  })
  app.server.on('connect', (req: IncomingMessage, socket: Socket) => {
    socket.on('error', () => { socket.destroy() })
    const headers = { ...req.headers }
    app.inject({ method: 'CONNECT' as never, url: instanceOf(req.url ?? '/'), headers, remoteAddress: req.socket.remoteAddress ?? '127.0.0.1' })
      .then(res => {
        const kept = Object.entries(res.headers).filter(([k]) => !FRAMING.has(k))
        const lines = kept.flatMap(([k, v]) => [v].flat().map(x => `${k}: ${String(x)}\r\n`)).join('')
        socket.write(`HTTP/1.1 ${res.statusCode} ${STATUS_CODES[res.statusCode] ?? ''}\r\n${lines}content-length: ${res.rawPayload.length}\r\nconnection: close\r\n\r\n`)
        socket.end(res.rawPayload, () => socket.destroy())
      }, () => { socket.destroy() })
  })
}, { name: 'node-requests' })
