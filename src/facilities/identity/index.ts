import { Counter } from 'prom-client'
import type { Facility, PartContext, Services } from '../../http/contract/resources.ts'
import type { Job } from '../../jobs/job.ts'
import { IdentityService } from './identity-service.ts'
import { identityFieldCodes, identityProblems } from './problems.ts'
import { sessionsResource } from './sessions-resource.ts'
import { identitySettings } from './settings.ts'
import { identityStore } from './store.ts'
import { usersResource } from './users-resource.ts'
import { authorsResource } from './authors-resource.ts'

export { IdentityService, personPrincipal, setupTokenOf, type SessionStart } from './identity-service.ts'
export { isServiceToken, TokenRefused, ACCESS_TOKEN_S } from './tokens.ts'
export type { UserRecord } from './store.ts'
export { checkPassword, hashPassword } from './passwords.ts'

declare module '../../http/contract/resources.ts' {
  interface Services {
    /** People: who a token is, sign-in, sessions, passkeys, codes, invitations, resets. */
    readonly identity: IdentityService
  }
}

async function identityServices (ctx: PartContext): Promise<Partial<Services>> {
  const verifications = new Counter({ name: 'password_verifications_total', help: 'Password hash comparisons this instance made (sign-ins and password changes; an unknown email against a decoy)', registers: [ctx.metrics] })
  const identity = new IdentityService(ctx.store, ctx.clock, ctx.config, await ctx.store.serverSecret(), verifications)
  await identity.start()
  return { identity }
}

function identityJobs (ctx: PartContext): Job[] {
  return [ctx.services.identity.revocations.job(), ctx.services.identity.revocations.sweep()]
}

/**
 * People: users and their roles, sign-in by password, passkey, invitation or set-up, two-factor
 * codes, sessions whose refresh tokens rotate, access tokens the service signs (with a JWKS), the
 * throttle, and the revocations every instance follows. Its HTTP faces are the users' routes
 * (`/users`, `/users/me/…`) and the sessions' (`/sessions`, `/setup`, `/invitations`,
 * `/password-resets`, `/.well-known/jwks.json`).
 */
export const identityFacility: Facility = {
  name: 'identity',
  problems: identityProblems,
  fieldCodes: identityFieldCodes,
  settings: identitySettings,
  store: identityStore,
  services: identityServices,
  jobs: identityJobs,
  resources: [usersResource, sessionsResource, authorsResource],
}
