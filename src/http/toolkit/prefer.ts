import type { FastifyReply, FastifyRequest } from 'fastify'

/** The preferences of a `Prefer` header (RFC 7240), lower-cased: `return=minimal` → { return: 'minimal' }. */
export function preferences (req: FastifyRequest): Map<string, string> {
  const out = new Map<string, string>()
  const raw = req.headers.prefer
  const values = Array.isArray(raw) ? raw : raw === undefined ? [] : [raw]
  for (const header of values) {
    for (const item of header.split(',')) {
      const [pref = ''] = item.split(';')
      const [name = '', value = ''] = pref.split('=').map(s => s.trim().replace(/^"|"$/g, ''))
      if (name !== '' && !out.has(name.toLowerCase())) out.set(name.toLowerCase(), value.toLowerCase())
    }
  }
  return out
}

export function prefers (req: FastifyRequest, name: string, value: string): boolean {
  return preferences(req).get(name) === value
}

/** Records a preference the response honoured in `Preference-Applied`. */
export function applied (reply: FastifyReply, preference: string): void {
  const current = reply.getHeader('preference-applied')
  reply.header('preference-applied', current === undefined ? preference : `${String(current)}, ${preference}`)
}
