// SPDX-License-Identifier: Apache-2.0
/* redact: URLs and headers as log lines show them. */
#include <string.h>

#include "check.h"
#include "util/redact.h"

static void url(const char *in, const char *want)
{
	char out[256];

	CHECK_STR(redact__url(in, out, sizeof(out)), want);
}

int main(void)
{
	char small[12], h[64];

	url("http://pyroscope:4040", "http://pyroscope:4040");
	url("https://user:s3cret@pyro.example.com/base",
	    "https://<redacted>@pyro.example.com/base");
	/* an '@' in the password: the userinfo ends at the last '@' before the path */
	url("https://u:p@ss@host:443/x", "https://<redacted>@host:443/x");
	url("https://host/path?token=abc&x=1", "https://host/path?<redacted>");
	url("https://u:p@host?token=abc", "https://<redacted>@host?<redacted>");
	/*
	 * issue 19: a password holding '/', '#' or '?' unescaped (the part before them used to
	 * show); so an '@' in a path hides what precedes it too (never a secret shown)
	 */
	url("https://u:pa/ss@host/x", "https://<redacted>@host/x");
	url("https://u:pa#ss@host/x", "https://<redacted>@host/x");
	url("https://u:pa?ss@host/x", "https://<redacted>@host/x");
	url("https://host/a@b", "https://<redacted>@b");
	url("user:pw@host", "<redacted>@host");
	/* lists, as DEBUGINFOD_URLS */
	url("https://a:b@one.example  http://two.example/?k=v",
	    "https://<redacted>@one.example  http://two.example/?<redacted>");
	url("", "");
	CHECK_STR(redact__url(NULL, h, sizeof(h)), "");
	/* a short buffer is cut, terminated, and still shows no secret */
	redact__url("https://user:s3cret@host", small, sizeof(small));
	CHECK_INT(strlen(small), sizeof(small) - 1);
	CHECK(!strstr(small, "s3cret"), "secret in %s", small);

	CHECK_STR(redact__header("Authorization: Bearer xyz", h, sizeof(h)),
		  "Authorization: <redacted>");
	CHECK_STR(redact__header("X-Token:abc", h, sizeof(h)), "X-Token: <redacted>");
	CHECK_STR(redact__header("no colon token", h, sizeof(h)), "<redacted>");
	return check_done("redact");
}
