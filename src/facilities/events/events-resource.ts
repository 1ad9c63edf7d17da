import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Principal } from '../../domain/principal.ts'
import { AppError, fieldError, validationFailed } from '../../errors.ts'
import type { Resource, RouteContext } from '../../http/contract/resources.ts'
import { COMMON_ERRORS, problemResponses } from '../../http/contract/schemas.ts'
import { EventStream, type StreamHub } from './stream-hub.ts'

declare module '../../http/contract/resources.ts' {
  interface Services {
    /** This instance's open change streams and the reader that feeds them. */
    readonly eventStreams: StreamHub
  }
}

export const EVENT_STREAM = 'text/event-stream'
const EVENT_ID = /^\d{1,18}$/
/** How long a client's EventSource waits before reconnecting (the SSE `retry` field). */
const RETRY_MS = 2000

/** The query of GET /events; `eventTypes`: every type the registered resources raise. */
const eventsQuerySchema = (eventTypes: readonly string[]) => Type.Object({
  after: Type.Optional(Type.String({ maxLength: 18, pattern: '^[0-9]+$', description: 'Resume just after this event id (as `Last-Event-ID`, which wins when both are sent).' })),
  types: Type.Optional(Type.String({ minLength: 1, maxLength: 500, description: `Comma list of event types to receive: ${eventTypes.join(', ')}.` })),
}, { additionalProperties: false })

/** Whether Accept names text/event-stream (with q > 0); a wildcard is not enough, since the answer never ends. */
function acceptsEventStream (accept: string | undefined): boolean {
  return (accept ?? '').split(',').some(range => {
    const [type = '', ...params] = range.split(';').map(s => s.trim().toLowerCase())
    return type === EVENT_STREAM && !params.some(p => /^q=0(\.0*)?$/.test(p))
  })
}

function typesOf (raw: string | undefined, eventTypes: readonly string[]): Set<string> | null {
  if (raw === undefined) return null
  const types = raw.split(',').map(t => t.trim())
  const unknown = types.filter(t => !eventTypes.includes(t))
  if (unknown.length > 0) throw validationFailed(unknown.map(t => fieldError('types', 'INVALID_VALUE', `"${t}" is not an event type; use any of ${eventTypes.join(', ')}.`)))
  return new Set(types)
}

/** The position to resume after: `Last-Event-ID`, else `?after=`, else none (only new events). */
function resumeAfter (header: string | string[] | undefined, query: string | undefined): number | null {
  const raw = typeof header === 'string' ? header.trim() : query
  if (raw === undefined) return null
  if (!EVENT_ID.test(raw)) throw validationFailed([fieldError(typeof header === 'string' ? 'Last-Event-ID' : 'after', 'INVALID_VALUE', 'An event id is a string of decimal digits.')])
  return Number(raw)
}

/** Change stream: `GET /events` as Server-Sent Events. */
async function eventRoutes (app: FastifyInstance, ctx: RouteContext): Promise<void> {
  app.get<{ Querystring: { after?: string, types?: string } }>('/events', ctx.route({
    config: { requiresCredential: true, longLived: true },
    schema: {
      tags: ['events'],
      summary: 'The change stream (Server-Sent Events)',
      description: 'Needs `Accept: text/event-stream` (else 406) and any valid credential. Each event: `id: <event id>`, `event: <type>`, `data: <the event as JSON>`. Admins see every event; others the events of published posts and of their own posts, orders and exports. `Last-Event-ID` or `after` resumes just after that event (older than the retention: a `reset` event first); neither: only new events. A comment line at least every 15 s. See docs/events.md.',
      querystring: eventsQuerySchema(ctx.eventTypes),
      produces: [EVENT_STREAM],
      security: [{ bearer: [] }],
      response: {
        200: { description: 'The stream; it stays open.', content: { [EVENT_STREAM]: { schema: { type: 'string' } } } },
        ...problemResponses(...COMMON_ERRORS, 422),
      },
    },
  }), async (req, reply) => {
    if (!acceptsEventStream(req.headers.accept)) throw new AppError('NOT_ACCEPTABLE', 'GET /events answers only text/event-stream: send Accept: text/event-stream.')
    const types = typesOf(req.query.types, ctx.eventTypes)
    const after = resumeAfter(req.headers['last-event-id'], req.query.after)
    const hub = ctx.services.eventStreams
    const reset = after !== null && after < await ctx.store.events.prunedThrough()
    const cursor = after ?? await hub.newest()
    reply.hijack()
    // What the hooks set so far (trace, request id, rate limit, security headers) goes out too.
    const set = Object.entries(reply.getHeaders()).filter((h): h is [string, string | number | string[]] => h[1] !== undefined)
    reply.raw.writeHead(200, {
      ...Object.fromEntries(set),
      'content-type': `${EVENT_STREAM}; charset=utf-8`,
      'cache-control': 'no-store',
      // Proxies that buffer answers (nginx) would hold the events back.
      'x-accel-buffering': 'no',
    })
    const stream = new EventStream(reply.raw, req.principal as Principal, types, cursor)
    stream.write(`retry: ${RETRY_MS}\n\n`)
    if (reset) {
      stream.write(`event: reset\ndata: ${JSON.stringify({ type: 'reset', after: String(after), detail: 'Events after this id are older than the retention and were deleted; the stream goes on with the oldest event kept. Re-read the resources you mirror.' })}\n\n`)
    }
    try {
      await hub.join(stream)
    } catch (err) {
      // The answer has begun: the only thing left to say is to end it (the client resumes).
      req.log.warn({ err }, 'change stream ended: the event log could not be read')
      reply.raw.end()
    }
  })
}

export const eventsResource: Resource = {
  name: 'events',
  description: 'The change stream: every event you may see, as Server-Sent Events',
  path: '/events',
  indexed: false,
  schemas: [],
  routes: eventRoutes,
}
