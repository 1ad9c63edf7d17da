import type { FastifyReply } from 'fastify'

/** Adds one link-value to the response's `Link` header (RFC 8288), keeping those already there. */
export function appendLink (reply: FastifyReply, linkValue: string): void {
  const current = reply.getHeader('link')
  reply.header('link', current === undefined || current === '' ? linkValue : `${String(current)}, ${linkValue}`)
}
