// `harness serve`: the HTTP + Server-Sent-Events service (docs/serve.md) over a journal, with
// the models the operator configures on its command line.
#include <fmt/format.h>

#include <CLI/CLI.hpp>
#include <condition_variable>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <vector>

#include "arguments.h"
#include "commands.h"
#include "harness/inference/tokenizer.h"
#include "harness/runtime/snapshot.h"
#include "harness/serve/server.h"
#include "journal_factory.h"
#include "journal_retention.h"
#include "model_factory.h"
#include "number_option.h"
#include "policy_defaults.h"
#include "serve_log.h"
#include "signals.h"
#include "terminal_text.h"

namespace harness::cli {

// The defaults are documented in docs/serve.md; change both together.
struct ServeCommandLine {
  CLI::App* command = nullptr;
  std::string listen = "127.0.0.1:8420";
  std::string data_dir;  // set by --data-dir or ApplySettings (settings.h)
  std::string journal;
  std::vector<std::string> models;  // NAME=SPEC
  std::string token_file;
  std::size_t threads = 4;
  std::size_t max_connections = 256;
  std::size_t max_body_bytes = 1u << 20;
  std::size_t max_sessions = 256;
  std::int64_t connection_timeout_seconds = 60;
  std::int64_t request_timeout_seconds = 30;
  // Given on the command line only when --max-connections-per-address was (else the rule of
  // ServeOptions::max_connections_per_address).
  std::size_t max_connections_per_address = 0;
  CLI::Option* per_address_option = nullptr;
  std::int64_t lease_ttl_seconds = 30;
  std::int64_t keepalive_seconds = 15;
  std::vector<std::string> cors_origins;
  std::int64_t tool_timeout_seconds = 600;
  std::int64_t idle_release_seconds = 300;  // 0: never
  std::string advertise_url;                // "": none
  std::int64_t blocking_idle_seconds = 10;  // 0: a worker ends as soon as it has nothing to run
  std::string retention;                    // "": none; K or "none" (journal_retention.h)
  std::string retention_archive_dir;        // a PostgreSQL journal's archives
  std::int64_t snapshot_interval = static_cast<std::int64_t>(kDefaultSnapshotInterval);
  std::string upstream;  // "": no gateway forwarding
  bool no_gateway_journal = false;
  TokenCount gateway_compact_at = 0;  // 0 (not given): the Chat Completions wire never compacts
  std::size_t gateway_conversations = 1024;
  std::string log_format = "none";  // serve_log.h
};

namespace {

// A token file holds the token on its first line; larger files are not tokens.
constexpr std::size_t kMaxTokenFileBytes = 4096;

int Usage(std::string_view message) {
  std::fprintf(stderr, "harness serve: %s\n", TerminalText(message).c_str());
  return kExitUsage;
}

// The bearer token: HARNESS_SERVE_TOKEN or the first line of --token-file (not both).
Result<std::optional<std::string>, std::string> ReadToken(const ServeCommandLine& line) {
  const char* env = std::getenv("HARNESS_SERVE_TOKEN");
  const bool from_env = env != nullptr && *env != '\0';
  if (from_env && !line.token_file.empty())
    return Fail(std::string("give the token by HARNESS_SERVE_TOKEN or --token-file, not both"));
  if (from_env)
    return std::optional<std::string>(env);
  if (line.token_file.empty())
    return std::optional<std::string>();
  std::ifstream file(line.token_file, std::ios::binary);
  if (!file)
    return Fail(std::string("cannot read --token-file"));
  std::string text(kMaxTokenFileBytes + 1, '\0');
  file.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(file.gcount()));
  if (text.size() > kMaxTokenFileBytes)
    return Fail(fmt::format("--token-file is larger than {} bytes", kMaxTokenFileBytes));
  text = text.substr(0, text.find_first_of("\r\n"));
  if (text.empty())
    return Fail(std::string("--token-file holds no token on its first line"));
  return std::optional<std::string>(std::move(text));
}

// A served model with the CLI's context for `flags` (policy_defaults.h): `client` (null: it runs
// no turns) under `key`, or under the context's own model key when none is given.
Result<serve::ServedModel, std::string> ServedWithContext(const ContextFlags& flags,
                                                          std::shared_ptr<ModelClient> client,
                                                          std::optional<ModelKey> key) {
  auto context = ChooseLoopContext(flags, TokenizerDirFromEnvironment());
  if (!context.ok())
    return Fail(context.error().message);
  serve::ServedModel served;
  served.client = std::move(client);
  served.model = key ? std::move(*key) : context->model;
  served.limits = context->limits;
  served.counter = context->counter;
  served.policy = context->policy;
  return served;
}

// A configured model makes a fresh client (and, for a scripted model, reads its script afresh)
// for every loop, with the CLI's context defaults.
// With `on_text`, the client gives it the answer's text as it streams (a provider's stream, a
// script's "stream" steps): the server's text_delta frames.
// With a log, the client's failures are logged (serve_log.h).
Result<serve::ServedModel, std::string> MakeServedModel(
    const std::string& spec, const std::shared_ptr<const ServeLog>& log = nullptr,
    TextDeltaSink on_text = {}) {
  ModelClientSettings settings;
  settings.on_text = std::move(on_text);
  auto model = MakeModelClient(spec, settings);
  if (!model.ok())
    return Fail(model.error().Message("--model", "scripted:PATH"));
  if (log && log->enabled())
    model->client = std::make_shared<LoggedModelClient>(model->client, model->model, log);
  ContextFlags flags;
  if (!model->scripted)
    flags.model = model->model;
  return ServedWithContext(flags, model->client, model->model);
}

// The offline model (harness/offline) with the CLI's context defaults, as `harness compact`
// without --model has it; no client: it runs no turns.
Result<serve::ServedModel, std::string> MakeOfflineServedModel() {
  return ServedWithContext(ContextFlags{}, nullptr, std::nullopt);
}

Result<std::map<std::string, serve::ConfiguredModel>, std::string> ConfiguredModels(
    const std::vector<std::string>& specs, const std::shared_ptr<const ServeLog>& log) {
  std::map<std::string, serve::ConfiguredModel> models;
  for (const std::string& text : specs) {
    const std::size_t equals = text.find('=');
    if (equals == std::string::npos || equals == 0 || equals + 1 == text.size())
      return Fail(std::string("--model must be NAME=SPEC (e.g. fast=openai:gpt-4o-mini)"));
    const std::string name = text.substr(0, equals);
    const std::string spec = text.substr(equals + 1);
    if (name == "offline") {
      return Fail(std::string(
          "--model: the name offline is the server's own model that only compacts (and the "
          "offline compactor's)"));
    }
    if (models.count(name) != 0)
      return Fail(fmt::format("--model: the name {} is given twice", name));
    // Made once now, so that a spec that cannot work refuses to start the server.
    HARNESS_TRY(serve::ServedModel first, MakeServedModel(spec));
    for (const auto& [other, configured] : models) {
      if (configured.model == first.model) {
        return Fail(
            fmt::format("--model: {} and {} are the same model {}/{}: a restored loop "
                        "could not tell them apart",
                        other, name, first.model.provider, first.model.model));
      }
    }
    models.emplace(name, serve::ConfiguredModel{
                             first.model, [spec, log] { return MakeServedModel(spec, log); },
                             [spec, log](TextDeltaSink on_text) {
                               return MakeServedModel(spec, log, std::move(on_text));
                             }});
  }
  // "offline": a loop that only compacts needs no conversation model, so a server started
  // without --model still serves them (docs/serve.md). Its model runs no turns (no client).
  HARNESS_TRY(serve::ServedModel offline, MakeOfflineServedModel());
  models.emplace("offline",
                 serve::ConfiguredModel{offline.model, [] { return MakeOfflineServedModel(); }});
  return models;
}

int Run(const ServeCommandLine& line) {
  SignalWatch signals("harness serve", "");
  auto listen = ParseListenAddress(line.listen);
  if (!listen.ok())
    return Usage(listen.error());
  auto store = StoreFromOptions(line.data_dir, line.journal);
  if (!store.ok())
    return Usage(store.error());
  auto token = ReadToken(line);
  if (!token.ok())
    return Usage(token.error());
  SystemEnv env;  // the server's time and ids, and the log's; outlives them
  const auto format = LogFormatFromName(line.log_format);
  if (!format)
    return Usage("--log-format is none, text or json");
  const auto log = std::make_shared<const ServeLog>(*format, env);
  auto models = ConfiguredModels(line.models, log);
  if (!models.ok())
    return Usage(models.error());
  if (!*token && !serve::IsLoopbackHost(listen->host)) {
    return Usage(fmt::format(
        "--listen {} is not a loopback address: set a bearer token (HARNESS_SERVE_TOKEN or "
        "--token-file) so that only clients holding it are served",
        line.listen));
  }
  signals.Arm();
  auto journal = OpenJournalStore(*store, StoreAccess::kCreate);
  if (!journal.ok())
    return Usage(StoreProblem(*store, journal.error()));
  serve::ServeOptions options;
  options.host = listen->host;
  options.port = listen->port;
  options.token = std::move(*token);
  options.journal = journal->get();
  options.env = &env;
  options.models = std::move(*models);
  options.threads = line.threads;
  options.max_connections = line.max_connections;
  options.max_body_bytes = line.max_body_bytes;
  options.max_sessions = line.max_sessions;
  options.connection_timeout = std::chrono::seconds(line.connection_timeout_seconds);
  options.request_timeout = std::chrono::seconds(line.request_timeout_seconds);
  if (line.per_address_option->count() > 0)
    options.max_connections_per_address = line.max_connections_per_address;
  options.lease_ttl = std::chrono::seconds(line.lease_ttl_seconds);
  options.cors_origins = line.cors_origins;
  options.stream_keepalive = std::chrono::seconds(line.keepalive_seconds);
  options.tool_timeout = std::chrono::seconds(line.tool_timeout_seconds);
  options.idle_release = std::chrono::seconds(line.idle_release_seconds);
  options.advertise_url = line.advertise_url;
  options.blocking_idle = std::chrono::seconds(line.blocking_idle_seconds);
  options.snapshot_interval = static_cast<std::uint64_t>(line.snapshot_interval);
  if (!line.retention.empty()) {
    auto retention = ServeRetention(*store, line.retention, line.retention_archive_dir);
    if (!retention.ok())
      return Usage(retention.error());
    options.retention = std::move(*retention);
  }
  options.upstream = line.upstream;
  options.gateway_journal = !line.no_gateway_journal;
  if (line.gateway_compact_at > 0)
    options.gateway_compact_at = line.gateway_compact_at;
  options.gateway_conversations = line.gateway_conversations;
  if (log->enabled())
    options.on_request = [log](const serve::RequestRecord& record) { log->Request(record); };
  auto server = serve::Server::Start(std::move(options));
  if (!server.ok()) {
    std::fprintf(stderr, "harness %s\n", TerminalText(server.error().Message()).c_str());
    return server.error().kind == serve::ServeError::Kind::kListen ||
                   server.error().kind == serve::ServeError::Kind::kIdUnavailable
               ? kExitInvalid
               : kExitUsage;
  }
  const std::string host =
      listen->host.find(':') != std::string::npos ? "[" + listen->host + "]" : listen->host;
  std::printf("listening on http://%s:%u\n", host.c_str(),
              static_cast<unsigned>((*server)->port()));
  // The id (and URL) another server's 409 lease_held names when this process holds the session.
  if ((*server)->advertise_url().empty()) {
    std::printf("lease owner %s\n", (*server)->owner().ToString().c_str());
  } else {
    std::printf("lease owner %s advertising %s\n", (*server)->owner().ToString().c_str(),
                TerminalText((*server)->advertise_url()).c_str());
  }
  std::fflush(stdout);
  {
    std::mutex mu;
    std::condition_variable_any never;
    std::unique_lock lock(mu);
    never.wait(lock, signals.token(), [] { return false; });
  }
  std::fprintf(stderr, "harness serve: %s: shutting down; sessions are suspended\n",
               std::string(SignalNameOfExitCode(signals.exit_code())).c_str());
  (*server)->Shutdown();
  return kExitOk;
}

}  // namespace

std::shared_ptr<ServeCommandLine> AddServeCommand(CLI::App& app) {
  auto line = std::make_shared<ServeCommandLine>();
  line->command = app.add_subcommand(
      "serve",
      "Serve sessions over HTTP: a JSON API under /v1 and their events as Server-Sent Events\n"
      "(docs/serve.md). Prints `listening on http://HOST:PORT` once ready; SIGINT or SIGTERM\n"
      "suspends every session and exits 0. Exit 2 bad usage; 1 the address cannot be bound.");
  auto* c = line->command;
  c->add_option("--listen", line->listen,
                "HOST:PORT to listen on; port 0 takes any free port. Off loopback a bearer "
                "token is required")
      ->capture_default_str();
  RegisterStoreOptions(*c, line->data_dir, line->journal);
  c->add_option("--model", line->models,
                "NAME=SPEC, repeatable: a model requests may name, SPEC as --model of "
                "`harness chat` (scripted:PATH or PROVIDER:MODEL). Without any, loops of the "
                "model \"offline\" (always there) compact and refuse input");
  c->add_option("--token-file", line->token_file,
                "a file whose first line is the bearer token every request must carry "
                "(or set HARNESS_SERVE_TOKEN)");
  AddNumberOption(*c, "--threads", line->threads, {1, 64}, "HTTP worker threads");
  AddNumberOption(*c, "--max-connections", line->max_connections, {1, 100'000},
                  "connections served at once");
  AddNumberOption(*c, "--max-body-bytes", line->max_body_bytes, {1, 64u << 20},
                  "largest request body");
  AddNumberOption(*c, "--max-sessions", line->max_sessions, {1, 100'000},
                  "sessions held in memory at once");
  AddNumberOption(*c, "--connection-timeout", line->connection_timeout_seconds, {1, 3600},
                  "seconds an idle connection is kept");
  AddNumberOption(*c, "--request-timeout", line->request_timeout_seconds, {1, 3600},
                  "seconds a request's headers and body may take to arrive, however slowly they "
                  "trickle in, counted from the accept or the previous response");
  line->per_address_option =
      AddNumberOption(*c, "--max-connections-per-address", line->max_connections_per_address,
                      {0, 100'000},
                      "connections one client address may hold at once (0: no limit); by "
                      "default half of --max-connections off loopback, no limit on loopback "
                      "(where every client has the same address)")
          ->default_str("auto");
  AddNumberOption(*c, "--lease-ttl", line->lease_ttl_seconds, {1, 3600},
                  "seconds a session's lease lasts without renewal (renewed at a third)");
  AddNumberOption(*c, "--keepalive", line->keepalive_seconds, {0, 3600},
                  "seconds between keepalive comments on a quiet event stream (0: none)");
  c->add_option("--cors-origin", line->cors_origins,
                "ORIGIN, repeatable: a browser origin (https://app.example) whose pages may "
                "call the API; none by default (a change from another page's origin is 403)");
  AddNumberOption(*c, "--tool-timeout", line->tool_timeout_seconds, {1, 86'400},
                  "seconds a call of a client tool waits for the client's result");
  AddNumberOption(*c, "--idle-release", line->idle_release_seconds, {0, 86'400},
                  "seconds a session may sit idle in memory before it is suspended and its "
                  "lease released, so another process may serve it (0: never)");
  c->add_option("--advertise-url", line->advertise_url,
                "URL, such as http://10.0.0.7:8420: where clients reach this server. Stored "
                "with its leases, so that another server on the journal names it in its 409 "
                "lease_held (absolute http or https, at most 2048 bytes, no user or password)");
  c->add_option("--log-format", line->log_format,
                "none, text or json: one line on stderr per request (method, path, status, "
                "duration, session; never a body, a header or a token) and per failed model call")
      ->check(CLI::IsMember({"none", "text", "json"}))
      ->capture_default_str();
  AddNumberOption(*c, "--blocking-idle", line->blocking_idle_seconds, {0, 86'400},
                  "seconds a worker thread of model calls and tools waits idle for the next "
                  "call before it ends (0: at once)");
  c->add_option("--retention", line->retention,
                "K or none: after each snapshot a session writes, archive and remove the records "
                "before it, keeping the originals of its K newest compactions (docs/cli.md, "
                "harness journal compact)");
  AddNumberOption(*c, "--snapshot-interval", line->snapshot_interval, {0, 1'000'000},
                  "records between two snapshots of a session's state in the journal, which a "
                  "restore starts from and --retention runs after (0: none)");
  c->add_option("--retention-archive-dir", line->retention_archive_dir,
                "where a PostgreSQL journal's archives go (a data directory's are DIR/archive)");
  c->add_option("--upstream", line->upstream,
                "URL, such as https://api.openai.com/v1: the API root (as an SDK's base URL) "
                "that POST /v1/responses, /v1/messages and /v1/chat/completions are forwarded "
                "to, with harness's compaction where they ask for it (docs/spec/gateway.md)");
  c->add_flag("--no-gateway-journal", line->no_gateway_journal,
              "the gateway's compactions are not journaled as sessions unless a request asks "
              "(store: true)");
  AddNumberOption(*c, "--gateway-compact-at", line->gateway_compact_at, {4, kMaxTokensFlag},
                  "TOKENS: POST /v1/chat/completions compacts a conversation whose history "
                  "reaches this many tokens (the offline model's estimate) before it goes "
                  "upstream, and sends its later requests with the compacted prefix; not given: "
                  "that wire forwards every request unchanged (docs/spec/gateway.md)")
      ->default_str("none");
  AddNumberOption(*c, "--gateway-conversations", line->gateway_conversations, {1, 1'000'000},
                  "conversations the Chat Completions gateway recognises at once (the least "
                  "recently used are forgotten first)");
  return line;
}

std::optional<int> RunServeCommand(const ServeCommandLine& line) {
  if (!line.command->parsed())
    return std::nullopt;
  return Run(line);
}

}  // namespace harness::cli
