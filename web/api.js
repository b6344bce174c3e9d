// natter's API from the page: same-origin requests carrying the session
// cookie, with the CSRF token on every state-changing request.

let csrfToken = null;

export function setCsrfToken(token) {
  csrfToken = token;
}

export class ApiError extends Error {
  constructor(status, body) {
    super((body && body.msg) || `HTTP ${status}`);
    this.status = status;
    this.code = body && body.code;
  }
}

function encode(params) {
  const form = new URLSearchParams();
  for (const [key, value] of Object.entries(params || {})) {
    if (value === undefined || value === null) continue;
    form.append(key, typeof value === "object" ? JSON.stringify(value) : String(value));
  }
  return form;
}

async function send(method, url, params, body) {
  const headers = {};
  if (method !== "GET" && csrfToken) headers["X-CSRF-Token"] = csrfToken;
  if (method === "GET") {
    const query = encode(params).toString();
    if (query) url += "?" + query;
  } else if (!body) {
    body = encode(params);
  }
  const response = await fetch(url, { method, headers, body, credentials: "same-origin" });
  let json = null;
  try {
    json = await response.json();
  } catch {
    // Not JSON: a proxy's error page.
  }
  if (!response.ok || !json || json.result !== "success") throw new ApiError(response.status, json);
  return json;
}

// `/api/v1<path>`.
export function api(method, path, params) {
  return send(method, "/api/v1" + path, params);
}

// The sign-in routes outside `/api/v1`.
export function web(method, path, params) {
  return send(method, path, params);
}

export function upload(file) {
  const form = new FormData();
  form.append("file", file, file.name);
  return send("POST", "/api/v1/user_uploads", null, form);
}
