import type { FastifyRequest } from 'fastify'
import type { Move } from '../domain/state-machine.ts'
import { AppError } from '../errors.ts'
import type { OwnedRecord, OwnedRows } from '../store/owned-rows.ts'
import { preconditionOf } from './conditional.ts'

/**
 * Applies a state machine's `move` to row `id` of `rows` (run it in the request's unit of work):
 * the request's If-Match / If-Unmodified-Since first (412 PRECONDITION_FAILED, RFC 9110 §13.1.1),
 * then the state (the move's `refused` problem), as one compare-and-set, so of two racing moves
 * one wins. A row the caller may not see is `notFound`.
 */
export async function act<T extends OwnedRecord> (req: FastifyRequest, kind: string, rows: OwnedRows<T, never>, id: number, move: Move<string>, notFound: () => AppError): Promise<T> {
  const holds = preconditionOf(req, kind)
  let expected: number | undefined
  if (holds !== undefined) {
    const current = await rows.find(id, req.principal)
    if (current === null) throw notFound()
    if (!holds(current)) throw new AppError('PRECONDITION_FAILED')
    expected = current.revision
  }
  const r = await rows.move(id, req.principal, move.from, move.to, new Date(), expected)
  if (r.outcome === 'done') return r.value
  if (r.outcome === 'missing') throw notFound()
  // Changed since the client's precondition was checked: its copy is stale.
  if (expected !== undefined && r.current.revision !== expected) throw new AppError('PRECONDITION_FAILED')
  throw new AppError(move.refused, `It is ${r.current.status}; only ${move.from.join(' or ')} can become ${move.to}.`)
}
