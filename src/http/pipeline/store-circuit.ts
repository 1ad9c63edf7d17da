import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { Counter, Gauge, type Registry } from 'prom-client'
import type { CircuitState } from '../../store/circuit.ts'
import type { Store } from '../../store/store.ts'
import { unavailable } from '../protocol/problems.ts'
import { pathOf, PROBE_PATHS } from './shedding.ts'

/** What needs no store: the probes (readiness reports the circuit itself) and the API's documents. */
function needsNoStore (path: string): boolean {
  return PROBE_PATHS.has(path) || path === '/openapi.json' || path === '/docs' || path.startsWith('/docs/')
}

const STATES: readonly CircuitState[] = ['closed', 'open', 'half-open']

/**
 * Fail fast while the store does not answer: when its circuit is open (src/store/circuit.ts), a
 * request is answered 503 with Retry-After at once instead of waiting out the store budget.
 * /metrics reports the circuit's state and how often it opened.
 */
export const storeCircuitPlugin = fp(async function storeCircuit (app: FastifyInstance, opts: { store: Store, metrics: Registry }) {
  const circuit = opts.store.circuit
  app.addHook('onRequest', (req, _reply, done) => {
    if (circuit.state === 'closed' || needsNoStore(pathOf(req.url))) return done()
    done(unavailable('SERVICE_UNAVAILABLE', 'The store is not answering (its circuit is open); nothing was tried. Retry after the time in Retry-After.'))
  })
  app.addHook('onReady', async () => {
    const registers = [opts.metrics]
    // eslint-disable-next-line no-new -- registered with the app's registry, read at each scrape
    new Gauge({
      name: 'store_circuit_state',
      help: 'The store\'s circuit breaker: 1 for its current state (closed: requests pass; open: 503 at once; half-open: a probe runs)',
      labelNames: ['state'],
      registers,
      collect () {
        for (const s of STATES) this.set({ state: s }, circuit.state === s ? 1 : 0)
      },
    })
    // eslint-disable-next-line no-new -- as above
    new Gauge({ name: 'store_consecutive_failures', help: 'Store failures in a row (timeouts, refused or lost connections)', registers, collect () { this.set(circuit.failures) } })
    let seen = 0
    // eslint-disable-next-line no-new -- as above
    new Counter({
      name: 'store_circuit_opened_total',
      help: 'How many times the store\'s circuit has opened',
      registers,
      collect () {
        this.inc(circuit.opened - seen)
        seen = circuit.opened
      },
    })
  })
}, { name: 'store-circuit', dependencies: ['problems'] })
