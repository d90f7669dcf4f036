#include "policy/env_policy.h"

#include <gtest/gtest.h>

#include <algorithm>

namespace anvil {
namespace env_policy_test {
namespace {

bool Has(const std::vector<std::string>& env, const std::string& entry) {
  return std::find(env.begin(), env.end(), entry) != env.end();
}

TEST(EnvPolicy, DropsLoaderVariablesAndSecretsKeepsTheRest) {
  std::vector<std::string> caller = {
      "PATH=/usr/bin",    "LD_PRELOAD=/tmp/evil.so", "LD_LIBRARY_PATH=/x",
      "GITHUB_TOKEN=t",   "AWS_SECRET_ACCESS_KEY=k", "my_password=p",
      "DB_CREDENTIALS=c", "GCONV_PATH=/x",           "HOME=/home/u",
      "LANG=C.UTF-8"};
  auto out = FilterEnvironment(caller, EnvPolicy{});
  EXPECT_TRUE(Has(out, "PATH=/usr/bin"));
  EXPECT_TRUE(Has(out, "HOME=/home/u"));
  EXPECT_TRUE(Has(out, "LANG=C.UTF-8"));
  // A search path like PATH: kept. The loaders' code-loading variables are not.
  EXPECT_TRUE(Has(out, "LD_LIBRARY_PATH=/x"));
  for (const auto& e : out) {
    if (e != "LD_LIBRARY_PATH=/x") {
      EXPECT_EQ(e.find("LD_"), std::string::npos) << e;
    }
    EXPECT_EQ(e.find("TOKEN"), std::string::npos) << e;
    EXPECT_EQ(e.find("SECRET"), std::string::npos) << e;
    EXPECT_EQ(e.find("password"), std::string::npos) << e;
    EXPECT_EQ(e.find("CREDENTIALS"), std::string::npos) << e;
    EXPECT_EQ(e.find("GCONV"), std::string::npos) << e;
  }
}

TEST(EnvPolicy, CredentialNamesAndUrlPasswordsAreDroppedWhateverTheName) {
  struct Row {
    const char* entry;
    bool dropped;
  };
  const Row rows[] = {
      // Database, ssh and forge credentials by their tools' names.
      {"MYSQL_PWD=p", true},
      {"PGPASSWORD=p", true},
      {"PGPASS=/home/u/.pgpass", true},
      {"SSHPASS=p", true},
      {"GH_PAT=ghp_x", true},
      {"GITHUB_PAT=ghp_x", true},
      {"PAT=x", true},
      {"BORG_PASSPHRASE=p", true},
      {"NPM_CONFIG__AUTH=dTpw", true},
      {"npm_config__auth=dTpw", true},
      {"npm_config_//registry.npmjs.org/:_authToken=t", true},
      {"SENTRY_DSN=https://k@o.ingest.sentry.io/1", true},
      {"DATABASE_DSN=mysql:host=h", true},
      {"HTTP_AUTHORIZATION=Bearer t", true},
      {"SSH_AUTH_SOCK=/tmp/ssh-x/agent.1", true},
      {"GOOGLE_OAUTH_CLIENT=x", true},
      // Public settings whose names hold a secret word, by exact name only.
      {"GOPRIVATE=corp.example/*", false},
      {"GONOPROXY=corp.example/*", false},
      {"GOINSECURE=corp.example/*", false},
      {"TOKENIZERS_PARALLELISM=false", false},
      {"KEYTIMEOUT=1", false},
      {"GOPRIVATE_TOKEN=x", true},
      {"GOPRIVATE=https://u:pw@corp.example/x", true},
      {"DB_AUTH=x", true},
      // A URL with a password, whatever the variable is called.
      {"DATABASE_URL=postgres://app:s3cret@db.internal:5432/app", true},
      {"PIP_INDEX_URL=https://user:pw@pypi.example/simple", true},
      {"CACHE=redis://:pw@cache:6379/0", true},
      {"MIRRORS=https://a.example/x https://u:p@b.example/y", true},
      {"WEIRD=\"git+https://u:tok@git.example/r.git\"", true},
      // Not secrets: the working directory, git identity, X authority file, plain URLs.
      {"PWD=/ws", false},
      {"OLDPWD=/ws/sub", false},
      {"GIT_AUTHOR_NAME=A U Thor", false},
      {"GIT_AUTHOR_EMAIL=a@example.com", false},
      {"XAUTHORITY=/run/user/1000/xauth", false},
      {"DATABASE_URL=postgres://localhost/app", false},
      {"REPO=https://git@github.com/o/r.git", false},
      {"SERVICE=http://localhost:8080/users/a@b", false},
      {"FTP=ftp://anonymous:@ftp.example/pub", false},
      {"NOTE=see http://example.com: user:pass@ is the form", false},
      {"PATH=/usr/bin", false},
      {"CLASSPATH=/a.jar", false},
  };
  for (const Row& row : rows) {
    std::vector<std::string> out = FilterEnvironment({row.entry}, EnvPolicy{});
    EXPECT_EQ(out.empty(), row.dropped) << row.entry;
  }
  // --keep-env names a variable deliberately: it is kept even with a password in its URL.
  EnvPolicy keep;
  keep.keep = {"DATABASE_URL"};
  EXPECT_TRUE(Has(FilterEnvironment({"DATABASE_URL=postgres://a:b@h/d"}, keep),
                  "DATABASE_URL=postgres://a:b@h/d"));
}

TEST(EnvPolicy, CredentialsInValuesAreDroppedWhateverTheirShape) {
  struct Row {
    const char* entry;
    bool dropped;
  };
  const Row rows[] = {
      // A password in a URL's userinfo, which RFC 3986 lets hold ',' ';' '&' '='.
      {"DATABASE_URL=postgres://app:pa;ss-hunter2@db.example/app", true},
      {"DB=postgres://app:pa,ss@db.example/app", true},
      {"REDIS=redis://:s3cr,et@cache:6379/0", true},
      {"AMQP=amqp://u:p&w=d@mq/vhost", true},
      {"REPO=https://ghp0abcdefghijklmnop1234567@github.com/o/r.git", true},  // a token as user
      // Secret query parameters (JDBC, presigned and SAS URLs, API keys).
      {"JDBC_DATABASE_URL=jdbc:postgresql://db:5432/app?user=app&password=hunter2", true},
      {"LINK=https://acct.blob.core.windows.net/c/b?sv=2020-08-04&se=2030-01-01&sig=abc%3D", true},
      {"OBJ=https://b.s3.amazonaws.com/k?X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Signature=ab",
       true},
      {"API=https://api.example/v1/items?api_key=abc123", true},
      {"CB=https://app.example/cb?access_token=abc", true},
      {"MAPS=https://maps.example/js?key=AIzaXYZ", true},
      // Connection strings, `Key=Value;`, and libpq's keyword form.
      {"STORAGE=DefaultEndpointsProtocol=https;AccountName=a;AccountKey=abc==;", true},
      {"BUS=Endpoint=sb://x.servicebus.windows.net/;SharedAccessKeyName=R;SharedAccessKey=a=",
       true},
      {"DB2=Server=db;Database=app;User Id=app;Password=hunter2;", true},
      {"SQL=Data Source=db; Initial Catalog=app; Pwd=hunter2", true},
      {"PGCONN=host=db user=app password=hunter2", true},
      // Authorization headers and schemes.
      {"HDR=AUTHORIZATION: basic dXNlcjpwYXNz", true},
      {"CURL_ARGS=-H \"Bearer abcdefgh.ijk\"", true},
      {"B=Basic dXNlcjpwYXNzd29yZA==", true},
      // Token shapes: a JWT, a private key, well-known prefixes.
      {"ID=eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiIxIn0.c2lnbmF0dXJl", true},
      {"PEM=-----BEGIN OPENSSH PRIVATE KEY-----\nb3Blbn\n-----END OPENSSH PRIVATE KEY-----", true},
      {"GH=ghp_abcdefghijklmnopqrstuvwxyz0123456789", true},
      {"GL=glpat-abcdefghij0123456789", true},
      {"SLACK=xoxb-1234567890-abcdef", true},
      {"AWSID=AKIAIOSFODNN7EXAMPLE", true},
      // Webhooks: the secret is the path.
      {"NOTIFY=https://hooks.slack.com/services/T000/B000/XXXXSECRET", true},
      {"CHAT=https://discord.com/api/webhooks/123/abc", true},
      {"TEAMS=https://acme.webhook.office.com/webhookb2/abc", true},
      // Names: JWT, COOKIE, SESSION, CONNECTION_STRING, WEBHOOK, PRIVATE.
      {"CI_JOB_JWT=x", true},
      {"SLACK_WEBHOOK_URL=x", true},
      {"AZURE_STORAGE_CONNECTION_STRING=x", true},
      {"ConnectionStrings__Default=x", true},
      {"DB_CONNSTR=x", true},
      {"SESSION_ID=x", true},
      {"MY_COOKIE=x", true},
      {"APP_PRIVATE=x", true},
      // Flags and config text (JVM/Gradle/Maven properties, CLI flags, netrc, JSON, YAML).
      {"JAVA_TOOL_OPTIONS=-Xmx1g -Dspring.datasource.password=hunter22", true},
      {"GRADLE_OPTS=-Dorg.gradle.project.signingPassword=hunter22", true},
      {"MAVEN_OPTS=-Xss4m -Dgpg.passphrase=correct-horse", true},
      {"MYSQL_OPTS=--user=root --password=hunter22", true},
      {"TOOL_ARGS=--password hunter22 --verbose", true},
      {"NETRC=machine api.example login u password hunter22", true},
      {"SPRING_APPLICATION_JSON={\"spring.datasource.password\":\"hunter22\"}", true},
      {"VCAP_SERVICES={\"db\":[{\"credentials\":{\"password\":\"hunter22\"}}]}", true},
      {"DOCKER_CONFIG_JSON={\"auths\":{\"r.example\":{\"auth\":\"dXNlcjpwYXNz\"}}}", true},
      {"APP_YAML=db:\n  password: hunter22\n", true},
      {"B2=Basic dXNlcjpwYXNz", true},
      // More well-known token prefixes.
      {"OPENAI=sk-proj-abcdefghijklmnopqrstuvwxyz0123", true},
      {"ANTHROPIC=sk-ant-api03-abcdefghijklmnopqrstuvwxyz", true},
      {"STRIPE=sk_live_abcdefghijklmnop1234", true},
      {"GOOGLE=AIzaSyAbCdEfGhIjKlMnOpQrStUvWxYz0123456", true},
      {"HF=hf_abcdefghijklmnopqrstuvwxyzABCDEFGH", true},
      // Short name endings, Bundler's per-host credentials, more prefixes.
      {"DOCKER_CREDS=alice:hunter2pass", true},
      {"DOCKER_CREDS_PSW=hunter2pass", true},
      {"DB_PW=hunter2pass", true},
      {"SONAR_LOGIN=squ_abcdef0123456789", true},
      {"BUNDLE_GEMS__CONTRIBSYS__COM=abcd1234:efgh5678", true},
      {"STRIPE_T=sk_test_abcdefghijklmnop1234", true},
      {"SENDGRID=SG.abcdefghijklmnopqrstuv.abcdefghijklmnopqrstuvwxyz0123456789ABCDEFG", true},
      {"VAULT=hvs.CAESIabcdefghijklmnopqrstuvwxyz", true},
      {"DOCKER_HUB=dckr_pat_abcdefghijklmnopqrstuvwx", true},
      {"SLACK_APP=xapp-1-A0000-000-abcdefghijklmnop", true},
      {"GROQ=gsk_abcdefghijklmnopqrstuvwxyzABCDEFGH", true},
      // Benign: everyday tools' variables, URLs without credentials, prose.
      {"BUNDLE_PATH=vendor/bundle", false},
      {"BUNDLE_WITHOUT=development:test", false},
      {"LOGNAME=alice", false},
      {"JAVA_OPTS=-Xmx2g -Dfile.encoding=UTF-8 -Duser.timezone=UTC -Dtoken.enabled=true", false},
      {"MAKEFLAGS=-j8 --no-print-directory", false},
      {"BUILD_ARGS=--password-file /run/secrets/db --token-stdin", false},
      {"CONFIG_JSON={\"logLevel\":\"debug\",\"tokenizer\":{\"kind\":\"bpe\"}}", false},
      {"NOTE=the password: is asked at login", false},
      {"TASK=desk-top task-runner", false},
      {"PATH=/usr/local/bin:/usr/bin", false},
      {"HOME=/home/u", false},
      {"LANG=en_US.UTF-8", false},
      {"TERM=xterm-256color", false},
      {"EDITOR=vim", false},
      {"PWD=/ws", false},
      {"OLDPWD=/ws/sub", false},
      {"GIT_AUTHOR_NAME=A U Thor", false},
      {"XAUTHORITY=/run/user/1000/xauth", false},
      {"CC=gcc", false},
      {"CFLAGS=-O2 -g -DNDEBUG -DAPI_KEY_LEN=32 -DUSE_TOKEN=1", false},
      {"PYTHONPATH=/ws/src:/ws/lib", false},
      {"NODE_OPTIONS=--max-old-space-size=4096", false},
      {"JAVA_TOOL_OPTIONS=-Dfile.encoding=UTF-8", false},
      {"SSL_CERT_FILE=/etc/ssl/certs/ca-certificates.crt", false},
      {"XDG_SESSION_TYPE=wayland", false},
      {"DESKTOP_SESSION=gnome", false},
      {"DBUS_SESSION_BUS_ADDRESS=unix:path=/run/user/1000/bus", false},
      {"LS_COLORS=rs=0:di=01;34:ln=01;36:mh=00:pi=40;33:so=01;35:*.tar=01;31:", false},
      {"PROMPT_COMMAND=history -a; history -n", false},
      {"SEARCH=https://www.example.com/search?q=anvil&hl=en", false},
      {"MIRROR=https://mirror.example/simple?platform=linux", false},
      {"PGCONN=host=db port=5432 dbname=app user=app", false},
      {"GOPROXY=https://proxy.golang.org,direct", false},
      {"NO_PROXY=localhost,127.0.0.1,.internal", false},
      {"NOTE=basic configuration is documented", false},
      {"REPO=https://git@github.com/o/r.git", false},
      {"SERVICE=http://localhost:8080/users/a@b", false},
  };
  for (const Row& row : rows) {
    std::vector<std::string> out = FilterEnvironment({row.entry}, EnvPolicy{});
    EXPECT_EQ(out.empty(), row.dropped) << row.entry;
  }
}

TEST(EnvPolicy, GitConfigFromTheEnvironmentGoesAsOneSet) {
  // GIT_CONFIG_KEY_0 contains KEY: dropped alone, it left COUNT and VALUE_0, so the credential
  // reached the command and git failed with "missing config key".
  const std::vector<std::string> leak = {"GIT_CONFIG_COUNT=2",
                                         "GIT_CONFIG_KEY_0=core.autocrlf",
                                         "GIT_CONFIG_VALUE_0=false",
                                         "GIT_CONFIG_KEY_1=http.extraheader",
                                         "GIT_CONFIG_VALUE_1=AUTHORIZATION: basic eDp5",
                                         "PATH=/usr/bin"};
  EXPECT_EQ(FilterEnvironment(leak, EnvPolicy{}), std::vector<std::string>{"PATH=/usr/bin"});
  for (const char* credential :
       {"http.https://git.example/.extraHeader=X-Token: 1", "credential.helper=store",
        "url.https://u:p@git.example/.insteadOf=https://git.example/", "sendemail.smtpPass=hunter2",
        "core.sshCommand=ssh -i k?password=x"}) {
    std::string pair = credential;
    const size_t eq = pair.find('=');
    auto out = FilterEnvironment({"GIT_CONFIG_COUNT=1", "GIT_CONFIG_KEY_0=" + pair.substr(0, eq),
                                  "GIT_CONFIG_VALUE_0=" + pair.substr(eq + 1)},
                                 EnvPolicy{});
    EXPECT_TRUE(out.empty()) << credential;
  }
  EXPECT_TRUE(FilterEnvironment({"GIT_CONFIG_PARAMETERS='http.extraheader'='Authorization: x'"},
                                EnvPolicy{})
                  .empty());
  // Benign: a set without a credential passes whole, KEY_<n> included.
  const std::vector<std::string> benign = {
      "GIT_CONFIG_COUNT=2",          "GIT_CONFIG_KEY_0=safe.directory",
      "GIT_CONFIG_VALUE_0=*",        "GIT_CONFIG_KEY_1=user.name",
      "GIT_CONFIG_VALUE_1=A U Thor", "GIT_CONFIG_PARAMETERS='core.pager'='less -R'"};
  EXPECT_EQ(FilterEnvironment(benign, EnvPolicy{}), benign);
  EXPECT_FALSE(IsGitConfigEnvName("GIT_CONFIG_KEY_X"));
  EXPECT_TRUE(LooksLikeSecretEnvName("GIT_CONFIG_KEY_X"));
}

TEST(EnvPolicy, KeepOverridesFilterAndClearKeepsOnlyNamed) {
  std::vector<std::string> caller = {"PATH=/usr/bin", "GITHUB_TOKEN=t", "HOME=/h"};
  EnvPolicy keep;
  keep.keep = {"GITHUB_TOKEN"};
  EXPECT_TRUE(Has(FilterEnvironment(caller, keep), "GITHUB_TOKEN=t"));
  EnvPolicy clear;
  clear.clear = true;
  clear.keep = {"PATH"};
  auto out = FilterEnvironment(caller, clear);
  EXPECT_EQ(out, std::vector<std::string>{"PATH=/usr/bin"});
}

TEST(EnvPolicy, SetReplacesAndMalformedEntriesAreDropped) {
  std::vector<std::string> caller = {"A=1", "noequals", "=x"};
  EnvPolicy p;
  p.set = {"A=2", "B=3"};
  auto out = FilterEnvironment(caller, p);
  EXPECT_EQ(out, (std::vector<std::string>{"A=2", "B=3"}));
}

TEST(EnvPolicy, MinimalEnvironmentHasNoCallerInfluence) {
  auto env = MinimalExecEnvironment();
  for (const auto& e : env) {
    EXPECT_FALSE(IsDangerousEnvName(e.substr(0, e.find('='))));
    EXPECT_EQ(e.find("RIPGREP"), std::string::npos);
  }
}

}  // namespace
}  // namespace env_policy_test
}  // namespace anvil
