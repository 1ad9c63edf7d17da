import { credential, Problem } from './api.ts'
import type { Api } from './api.ts'

/** A user as the service shows them (`GET /users/me`, `GET /users`); `email` only to themselves and admins. */
export interface User {
  id: string
  email?: string | null
  name: string
  slug: string
  bio: string
  website: string | null
  avatar: string | null
  role: Role
  status: 'active' | 'suspended' | 'inactive'
  two_factor: boolean
  updated_at: string
}

export const ROLES = ['contributor', 'author', 'editor', 'admin', 'owner'] as const
export type Role = typeof ROLES[number]

/** Whether `role` has everything `least` has (each role has everything of the ones before it). */
export function atLeast (role: Role | undefined, least: Role): boolean {
  return role !== undefined && ROLES.indexOf(role) >= ROLES.indexOf(least)
}

/**
 * Who is signed in: a person (a session), or null for an API key or a JWT, which is no person;
 * undefined until read. Read once per sign-in (`forgetPerson` at each sign-in and sign-out), and
 * again by `whoAmI(api, true)`, the editor's regular look (a role changed meanwhile shows).
 */
let me: User | null | undefined

export function signedInPerson (): User | null {
  return me ?? null
}

export function forgetPerson (): void {
  me = undefined
}

export async function whoAmI (api: Api, again = false): Promise<User | null> {
  if (credential.get() === null) return null
  if (!again && me !== undefined) return me
  if (!credential.isSession()) return (me = null)
  try {
    return (me = (await api.call<User>('GET', '/users/me')).body)
  } catch (err) {
    if (err instanceof Problem && err.status === 403) return (me = null)
    throw err
  }
}
