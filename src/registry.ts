import type { Resource } from './http/resources.ts'
import { postsResource } from './resources/posts/index.ts'
import { ordersResource } from './resources/orders/index.ts'
import { exportsResource } from './resources/exports/index.ts'

/** Every resource the service serves: adding one is its folder plus one line here. */
export const RESOURCES: readonly Resource[] = [
  postsResource,
  ordersResource,
  exportsResource,
]

/** The scopes a credential can carry (contract §5): each resource's, and `admin`, which alone permits everything. */
export const KNOWN_SCOPES: readonly string[] = [...RESOURCES.flatMap(r => r.scopes ?? []), 'admin']

/** The tables and repositories of every resource, which the service's store is opened with. */
export const STORE_MODULES = RESOURCES.flatMap(r => r.store ?? [])
