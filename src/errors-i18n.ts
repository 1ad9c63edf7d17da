/** Languages of problem `title` and `detail` besides English (Accept-Language). */
export const PROBLEM_LANGUAGES = ['en', 'de', 'fr', 'es'] as const
export type ProblemLanguage = typeof PROBLEM_LANGUAGES[number]

export type Text = { title: string, detail: string }
export type OtherLanguage = Exclude<ProblemLanguage, 'en'>

/**
 * Translations of the core's codes (errors.ts; src/catalogue.ts checks that each has every one). A
 * translated problem carries the code's general detail: the specific English detail (naming an id,
 * a field) is only sent in English.
 */
export const CORE_TRANSLATIONS = {
  de: {
    MALFORMED_JSON: { title: 'Fehlerhaftes JSON', detail: 'Der Anfragekörper ist kein gültiges JSON.' },
    INVALID_CURSOR: { title: 'Ungültiger Cursor', detail: 'Der Cursor gehört nicht zu dieser Abfrage oder wurde verändert. Beginnen Sie wieder mit der ersten Seite.' },
    INVALID_IDEMPOTENCY_KEY: { title: 'Ungültiger Idempotency-Key', detail: 'Ein Idempotency-Key muss aus 1 bis 255 sichtbaren ASCII-Zeichen bestehen.' },
    BAD_REQUEST: { title: 'Ungültige Anfrage', detail: 'Die Anfrage konnte nicht verstanden werden.' },
    UNAUTHENTICATED: { title: 'Anmeldung erforderlich', detail: 'Diese Anfrage braucht ein Bearer-Token oder einen API-Schlüssel im Authorization-Header.' },
    INVALID_TOKEN: { title: 'Ungültiges Token', detail: 'Die Anmeldedaten sind fehlerhaft, abgelaufen, widerrufen oder nicht von einem vertrauenswürdigen Schlüssel signiert.' },
    FORBIDDEN: { title: 'Verboten', detail: 'Die Anmeldedaten sind gültig, erlauben diese Aktion aber nicht.' },
    NOT_FOUND: { title: 'Nicht gefunden', detail: 'Unter diesem Pfad gibt es nichts.' },
    METHOD_NOT_ALLOWED: { title: 'Methode nicht erlaubt', detail: 'Dieser Pfad unterstützt diese Methode nicht; der Allow-Header nennt die erlaubten.' },
    NOT_ACCEPTABLE: { title: 'Nicht annehmbar', detail: 'Keiner der Medientypen im Accept-Header kann geliefert werden. Verwenden Sie application/json, application/vnd.blog.v1+json oder application/vnd.blog.v2+json.' },
    CLIENT_TIMEOUT: { title: 'Anfrage nicht rechtzeitig empfangen', detail: 'Anfragezeile, Header oder Körper kamen nicht rechtzeitig an; die Verbindung wird geschlossen.' },
    CONFLICT: { title: 'Konflikt', detail: 'Die Anfrage steht im Widerspruch zum aktuellen Zustand der Ressource.' },
    PATCH_TEST_FAILED: { title: 'Patch-Test fehlgeschlagen', detail: 'Eine „test“-Operation des JSON Patch passte nicht zur aktuellen Ressource; nichts wurde geändert.' },
    IDEMPOTENCY_KEY_IN_USE: { title: 'Idempotency-Key in Verwendung', detail: 'Eine Anfrage mit diesem Idempotency-Key wird noch bearbeitet. Versuchen Sie es später erneut.' },
    VERSION_SUNSET: { title: 'API-Version eingestellt', detail: 'Diese Version der API hat ihr Abschaltdatum überschritten. Verwenden Sie eine neuere Version.' },
    PRECONDITION_FAILED: { title: 'Vorbedingung nicht erfüllt', detail: 'Die Ressource hat sich seit der in If-Match oder If-Unmodified-Since genannten Version geändert. Nichts wurde geändert.' },
    PAYLOAD_TOO_LARGE: { title: 'Anfrage zu groß', detail: 'Der Anfragekörper ist größer, als dieser Endpunkt annimmt (1 MiB bei JSON; manche Endpunkte haben eigene Grenzen).' },
    URI_TOO_LONG: { title: 'URI zu lang', detail: 'Die Anfrage-URI ist länger als erlaubt.' },
    UNSUPPORTED_MEDIA_TYPE: { title: 'Nicht unterstützter Medientyp', detail: 'Der Content-Type des Anfragekörpers wird hier nicht unterstützt.' },
    RANGE_NOT_SATISFIABLE: { title: 'Bereich nicht erfüllbar', detail: 'Der angeforderte Bytebereich liegt außerhalb der Datei.' },
    EXPECTATION_FAILED: { title: 'Erwartung nicht erfüllbar', detail: 'Der Expect-Header nennt eine Erwartung, die der Dienst nicht erfüllen kann; nur 100-continue wird unterstützt.' },
    VALIDATION_FAILED: { title: 'Validierung fehlgeschlagen', detail: 'Die Anfrage ist wohlgeformt, aber einige Werte sind ungültig; siehe errors.' },
    INVALID_PATCH: { title: 'Ungültiger Patch', detail: 'Das Patch-Dokument kann nicht auf diese Ressource angewendet werden.' },
    IDEMPOTENCY_KEY_REUSED: { title: 'Idempotency-Key wiederverwendet', detail: 'Dieser Idempotency-Key wurde bereits mit einem anderen Anfragekörper verwendet.' },
    RATE_LIMITED: { title: 'Zu viele Anfragen', detail: 'Das Anfragelimit dieses Clients ist erschöpft. Versuchen Sie es nach der in Retry-After genannten Zeit erneut.' },
    HEADERS_TOO_LARGE: { title: 'Header zu groß', detail: 'Die Anfrage-Header sind größer als erlaubt.' },
    INTERNAL_ERROR: { title: 'Interner Serverfehler', detail: 'Bei uns ist etwas schiefgegangen. Nennen Sie die request_id, wenn Sie es melden.' },
    SERVICE_UNAVAILABLE: { title: 'Dienst nicht verfügbar', detail: 'Der Dienst ist überlastet oder sein Speicher nicht erreichbar. Versuchen Sie es nach der in Retry-After genannten Zeit erneut.' },
    REQUEST_TIMEOUT: { title: 'Zeitüberschreitung der Anfrage', detail: 'Die Anfrage wurde nicht rechtzeitig fertig und abgebrochen. Versuchen Sie es nach der in Retry-After genannten Zeit erneut.' },
  },
  fr: {
    MALFORMED_JSON: { title: 'JSON mal formé', detail: 'Le corps de la requête n’est pas du JSON valide.' },
    INVALID_CURSOR: { title: 'Curseur invalide', detail: 'Le curseur n’a pas été émis pour cette requête, ou il a été modifié. Recommencez à la première page.' },
    INVALID_IDEMPOTENCY_KEY: { title: 'Idempotency-Key invalide', detail: 'Une Idempotency-Key doit compter de 1 à 255 caractères ASCII visibles.' },
    BAD_REQUEST: { title: 'Requête incorrecte', detail: 'La requête n’a pas pu être comprise.' },
    UNAUTHENTICATED: { title: 'Authentification requise', detail: 'Cette requête exige un jeton Bearer ou une clé d’API dans l’en-tête Authorization.' },
    INVALID_TOKEN: { title: 'Jeton invalide', detail: 'L’identifiant est mal formé, expiré, révoqué ou non signé par une clé de confiance.' },
    FORBIDDEN: { title: 'Interdit', detail: 'L’identifiant est valide mais ne permet pas cette action.' },
    NOT_FOUND: { title: 'Introuvable', detail: 'Il n’y a rien à cette adresse.' },
    METHOD_NOT_ALLOWED: { title: 'Méthode non autorisée', detail: 'Cette adresse n’accepte pas cette méthode ; l’en-tête Allow liste celles qu’elle accepte.' },
    NOT_ACCEPTABLE: { title: 'Non acceptable', detail: 'Aucun des types de média de l’en-tête Accept ne peut être produit. Utilisez application/json, application/vnd.blog.v1+json ou application/vnd.blog.v2+json.' },
    CLIENT_TIMEOUT: { title: 'Requête non reçue à temps', detail: 'La ligne de requête, les en-têtes ou le corps ne sont pas arrivés à temps ; la connexion est fermée.' },
    CONFLICT: { title: 'Conflit', detail: 'La requête est en conflit avec l’état actuel de la ressource.' },
    PATCH_TEST_FAILED: { title: 'Échec du test du patch', detail: 'Une opération « test » du JSON Patch ne correspond pas à la ressource actuelle ; rien n’a été modifié.' },
    IDEMPOTENCY_KEY_IN_USE: { title: 'Idempotency-Key en cours d’utilisation', detail: 'Une requête avec cette Idempotency-Key est encore en traitement. Réessayez plus tard.' },
    VERSION_SUNSET: { title: 'Version de l’API retirée', detail: 'Cette version de l’API a dépassé sa date de retrait. Utilisez une version plus récente.' },
    PRECONDITION_FAILED: { title: 'Précondition non remplie', detail: 'La ressource a changé depuis la version indiquée par If-Match ou If-Unmodified-Since. Rien n’a été modifié.' },
    PAYLOAD_TOO_LARGE: { title: 'Requête trop volumineuse', detail: 'Le corps de la requête dépasse ce que ce point d’accès accepte (1 Mio pour du JSON ; certains points d’accès ont leurs propres limites).' },
    URI_TOO_LONG: { title: 'URI trop longue', detail: 'L’URI de la requête est plus longue que ce que le service accepte.' },
    UNSUPPORTED_MEDIA_TYPE: { title: 'Type de média non pris en charge', detail: 'Le Content-Type du corps de la requête n’est pas pris en charge ici.' },
    RANGE_NOT_SATISFIABLE: { title: 'Plage non satisfaisable', detail: 'La plage d’octets demandée est en dehors du fichier.' },
    EXPECTATION_FAILED: { title: 'Attente non satisfaite', detail: 'L’en-tête Expect exprime une attente que le service ne peut satisfaire ; seul 100-continue est pris en charge.' },
    VALIDATION_FAILED: { title: 'Échec de la validation', detail: 'La requête est bien formée mais certaines valeurs sont invalides ; voir errors.' },
    INVALID_PATCH: { title: 'Patch invalide', detail: 'Le document de patch ne peut pas être appliqué à cette ressource.' },
    IDEMPOTENCY_KEY_REUSED: { title: 'Idempotency-Key réutilisée', detail: 'Cette Idempotency-Key a déjà servi avec un autre corps de requête.' },
    RATE_LIMITED: { title: 'Trop de requêtes', detail: 'La limite de requêtes de ce client est atteinte. Réessayez après le délai indiqué par Retry-After.' },
    HEADERS_TOO_LARGE: { title: 'En-têtes trop volumineux', detail: 'Les en-têtes de la requête dépassent ce que le service accepte.' },
    INTERNAL_ERROR: { title: 'Erreur interne du serveur', detail: 'Une erreur s’est produite de notre côté. Indiquez la request_id en la signalant.' },
    SERVICE_UNAVAILABLE: { title: 'Service indisponible', detail: 'Le service est surchargé ou son stockage est injoignable. Réessayez après le délai indiqué par Retry-After.' },
    REQUEST_TIMEOUT: { title: 'Délai de la requête dépassé', detail: 'La requête n’a pas abouti à temps et a été abandonnée. Réessayez après le délai indiqué par Retry-After.' },
  },
  es: {
    MALFORMED_JSON: { title: 'JSON mal formado', detail: 'El cuerpo de la solicitud no es JSON válido.' },
    INVALID_CURSOR: { title: 'Cursor no válido', detail: 'El cursor no se emitió para esta consulta o fue alterado. Empiece de nuevo desde la primera página.' },
    INVALID_IDEMPOTENCY_KEY: { title: 'Idempotency-Key no válida', detail: 'Una Idempotency-Key debe tener de 1 a 255 caracteres ASCII visibles.' },
    BAD_REQUEST: { title: 'Solicitud incorrecta', detail: 'No se pudo entender la solicitud.' },
    UNAUTHENTICATED: { title: 'Autenticación requerida', detail: 'Esta solicitud necesita un token Bearer o una clave de API en la cabecera Authorization.' },
    INVALID_TOKEN: { title: 'Token no válido', detail: 'La credencial está mal formada, caducada, revocada o no firmada por una clave de confianza.' },
    FORBIDDEN: { title: 'Prohibido', detail: 'La credencial es válida pero no permite esta acción.' },
    NOT_FOUND: { title: 'No encontrado', detail: 'No hay nada en esta ruta.' },
    METHOD_NOT_ALLOWED: { title: 'Método no permitido', detail: 'Esta ruta no admite este método; la cabecera Allow enumera los que admite.' },
    NOT_ACCEPTABLE: { title: 'No aceptable', detail: 'No se puede producir ninguno de los tipos de medio de la cabecera Accept. Use application/json, application/vnd.blog.v1+json o application/vnd.blog.v2+json.' },
    CLIENT_TIMEOUT: { title: 'Solicitud no recibida a tiempo', detail: 'La línea de solicitud, las cabeceras o el cuerpo no llegaron a tiempo; la conexión se cierra.' },
    CONFLICT: { title: 'Conflicto', detail: 'La solicitud entra en conflicto con el estado actual del recurso.' },
    PATCH_TEST_FAILED: { title: 'Falló la prueba del parche', detail: 'Una operación «test» del JSON Patch no coincidió con el recurso actual; no se cambió nada.' },
    IDEMPOTENCY_KEY_IN_USE: { title: 'Idempotency-Key en uso', detail: 'Una solicitud con esta Idempotency-Key todavía se está procesando. Vuelva a intentarlo más tarde.' },
    VERSION_SUNSET: { title: 'Versión de la API retirada', detail: 'Esta versión de la API superó su fecha de retirada. Use una versión más reciente.' },
    PRECONDITION_FAILED: { title: 'Falló la condición previa', detail: 'El recurso cambió desde la versión indicada en If-Match o If-Unmodified-Since. No se cambió nada.' },
    PAYLOAD_TOO_LARGE: { title: 'Solicitud demasiado grande', detail: 'El cuerpo de la solicitud supera lo que acepta este punto de acceso (1 MiB para JSON; algunos puntos de acceso tienen sus propios límites).' },
    URI_TOO_LONG: { title: 'URI demasiado larga', detail: 'La URI de la solicitud es más larga de lo que el servicio acepta.' },
    UNSUPPORTED_MEDIA_TYPE: { title: 'Tipo de medio no admitido', detail: 'El Content-Type del cuerpo de la solicitud no se admite aquí.' },
    RANGE_NOT_SATISFIABLE: { title: 'Rango no satisfacible', detail: 'El rango de bytes solicitado está fuera del archivo.' },
    EXPECTATION_FAILED: { title: 'Expectativa no satisfecha', detail: 'La cabecera Expect pide algo que el servicio no puede cumplir; solo se admite 100-continue.' },
    VALIDATION_FAILED: { title: 'Falló la validación', detail: 'La solicitud está bien formada, pero algunos valores no son válidos; vea errors.' },
    INVALID_PATCH: { title: 'Parche no válido', detail: 'El documento de parche no se puede aplicar a este recurso.' },
    IDEMPOTENCY_KEY_REUSED: { title: 'Idempotency-Key reutilizada', detail: 'Esta Idempotency-Key ya se usó con otro cuerpo de solicitud.' },
    RATE_LIMITED: { title: 'Demasiadas solicitudes', detail: 'Se agotó el límite de solicitudes de este cliente. Vuelva a intentarlo tras el tiempo indicado en Retry-After.' },
    HEADERS_TOO_LARGE: { title: 'Cabeceras demasiado grandes', detail: 'Las cabeceras de la solicitud son más grandes de lo que el servicio acepta.' },
    INTERNAL_ERROR: { title: 'Error interno del servidor', detail: 'Algo salió mal de nuestro lado. Indique la request_id al informarlo.' },
    SERVICE_UNAVAILABLE: { title: 'Servicio no disponible', detail: 'El servicio está sobrecargado o su almacenamiento no responde. Vuelva a intentarlo tras el tiempo indicado en Retry-After.' },
    REQUEST_TIMEOUT: { title: 'Tiempo de espera agotado', detail: 'La solicitud no terminó a tiempo y se abandonó. Vuelva a intentarlo tras el tiempo indicado en Retry-After.' },
  },
} as const satisfies Record<OtherLanguage, Record<string, Text>>

/**
 * The best language of an Accept-Language header (RFC 9110 §12.5.4, basic filtering: `de-AT`
 * matches `de`, `*` matches English), English when nothing matches.
 */
export function problemLanguage (acceptLanguage: string | undefined): ProblemLanguage {
  if (acceptLanguage === undefined || acceptLanguage.trim() === '') return 'en'
  let best: ProblemLanguage = 'en'
  let bestQ = 0
  acceptLanguage.split(',').forEach(range => {
    const [tag = '', ...params] = range.split(';').map(s => s.trim().toLowerCase())
    let q = 1
    for (const p of params) if (p.startsWith('q=')) q = Number(p.slice(2))
    if (!(q > bestQ)) return
    const primary = tag === '*' ? 'en' : tag.split('-')[0]
    const lang = PROBLEM_LANGUAGES.find(l => l === primary)
    if (lang !== undefined) {
      best = lang
      bestQ = q
    }
  })
  return best
}
