import { AppError, type ProblemCode } from '../errors.ts'
import type { WriteResult } from '../store/store.ts'

/** One action of a state machine: the states it may start from, where it leads, and the problem when it may not. */
export interface Move<S extends string> {
  readonly from: readonly S[]
  readonly to: S
  readonly refused: ProblemCode
}

/** The actions a resource in `status` allows (what its `_links` offer). */
export function allowedActions<S extends string, A extends string> (moves: Readonly<Record<A, Move<S>>>, status: S): A[] {
  return (Object.keys(moves) as A[]).filter(a => moves[a].from.includes(status))
}

/**
 * Applies a move through `change`, a compare-and-set on the state (of two racing moves, one
 * wins): `missing` becomes `notFound`, a state the move cannot start from its `refused` problem.
 */
export async function applyMove<S extends string, T> (
  move: Move<S>,
  what: string,
  change: (from: readonly S[], to: S) => Promise<WriteResult<T>>,
  notFound: () => AppError
): Promise<T> {
  const r = await change(move.from, move.to)
  if (r.outcome === 'missing') throw notFound()
  if (r.outcome === 'stale') throw new AppError(move.refused, `${what} is not ${move.from.join(' or ')}; it cannot become ${move.to}.`)
  return r.value
}
