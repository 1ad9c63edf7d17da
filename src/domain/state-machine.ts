import type { ProblemCode } from '../errors.ts'

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
