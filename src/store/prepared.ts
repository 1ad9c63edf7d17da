import type { Compilable, CompiledQuery, Kysely } from 'kysely'
import type { Database, DialectParts } from './tables.ts'

/** Stands for one argument of a prepared query while Kysely compiles it. */
class Placeholder {
  constructor (readonly index: number) {}
}

/**
 * The `index`-th argument of a prepared query, where a value of type `T` goes. Kysely only carries
 * it into the compiled query's parameters, where `PreparedQuery.execute` puts the real value.
 */
export function arg<T> (index: number): T {
  return new Placeholder(index) as unknown as T
}

/**
 * A query Kysely built and compiled once, run with fresh values through Kysely's own executor
 * (`executeQuery`): on the repository's connection, which inside a unit of work is the
 * transaction's, and behind the SQLite driver's connection mutex. The SQL text never changes, so
 * the SQLite adapter's statement cache prepares it once, and on PostgreSQL it runs as a named
 * statement (DialectParts.nameStatement) that each connection parses and plans once; the build
 * and compile per request are saved too, which were the largest cost of a read.
 */
export class PreparedQuery<R> {
  /** Per compiled parameter: the argument it stands for, or -1 for a constant of the query. */
  private readonly slots: number[]

  constructor (private readonly compiled: CompiledQuery<R>) {
    this.slots = compiled.parameters.map(p => p instanceof Placeholder ? p.index : -1)
  }

  async execute (db: Kysely<Database>, args: readonly unknown[]): Promise<R[]> {
    const constants = this.compiled.parameters
    const parameters = this.slots.map((slot, i) => slot < 0 ? constants[i] : args[slot])
    const result = await db.executeQuery<R>({ ...this.compiled, parameters })
    return result.rows
  }
}

/** Distinct query shapes kept per dialect; a shape beyond them is built for each use (never unbounded). */
const MAX_SHAPES = 500

/** The prepared queries of one dialect, by shape. */
export class PreparedQueries {
  private readonly queries = new Map<string, PreparedQuery<unknown>>()

  constructor (private readonly dialect: DialectParts) {}

  /** The query of this `shape`, compiled by `build` (with `arg` placeholders) the first time. */
  get<R> (shape: string, build: () => Compilable<R>): PreparedQuery<R> {
    let query = this.queries.get(shape) as PreparedQuery<R> | undefined
    if (query === undefined) {
      const compiled = build().compile()
      query = new PreparedQuery(compiled)
      if (this.queries.size < MAX_SHAPES) {
        this.queries.set(shape, query as PreparedQuery<unknown>)
        // Only a kept shape is named: the names stay as bounded as the shapes.
        this.dialect.nameStatement?.(compiled.sql)
      }
    }
    return query
  }
}

const byDialect = new WeakMap<DialectParts, PreparedQueries>()

/** The prepared queries of a store (its DialectParts), shared by its repositories and its units of work. */
export function preparedQueries (dialect: DialectParts): PreparedQueries {
  let queries = byDialect.get(dialect)
  if (queries === undefined) {
    queries = new PreparedQueries(dialect)
    byDialect.set(dialect, queries)
  }
  return queries
}
