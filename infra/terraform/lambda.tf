# The six functions: provided.al2023 on arm64, one bootstrap per zip from `make build-lambda`.

locals {
  # The functions that call executors (ring, dispatch, web) run in the executors' VPC when one is given.
  in_vpc = length(var.vpc_subnet_ids) > 0
}

resource "aws_cloudwatch_log_group" "scan" {
  name              = "/aws/lambda/${var.name}-scan"
  retention_in_days = var.log_retention_days
}

resource "aws_lambda_function" "scan" {
  function_name    = "${var.name}-scan"
  description      = "Once a minute, plans every due job 150 s ahead under the shard leases; feeds the ring."
  filename         = "${path.module}/../../dist/scan.zip"
  source_code_hash = filebase64sha256("${path.module}/../../dist/scan.zip")
  handler          = "bootstrap"
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  memory_size      = 256
  timeout          = 55 # one tick (paging bounded at 20 s) + lease release, ended before the next minute
  role             = aws_iam_role.function["scan"].arn

  reserved_concurrent_executions = var.reserved_concurrency ? 2 : -1 # consecutive minutes overlap by the lease hand-over
  logging_config {
    log_format            = "JSON"
    system_log_level      = var.lambda_system_log_level
    application_log_level = "DEBUG"
    log_group             = aws_cloudwatch_log_group.scan.name
  }
  environment {
    variables = {
      XJOB_TABLE_PREFIX      = var.table_prefix
      XJOB_SHARDS            = tostring(var.shards)
      XJOB_LOG_PAGES         = tostring(var.log_pages)
      XJOB_LOG_LEVEL         = var.log_level
      XJOB_CUSTOM_METRICS    = tostring(var.custom_metrics)
      XJOB_RING_QUEUE_URL    = aws_sqs_queue.queue["ring"].url
      XJOB_DISPATCH_FUNCTION = "${var.name}-dispatch" # the lanes: its asynchronous invocations (its name, not a reference to itself)
      XJOB_SCAN_ADVANCE      = var.scan_advance
      XJOB_RING_LEAD         = var.ring_lead
      # PROVISIONED: the capacity keeper runs on the log pages (docs/aws.md#provisioned-capacity).
      XJOB_TABLE_BILLING_MODE       = var.table_billing_mode
      XJOB_TABLE_CAPACITY_MIN       = tostring(var.table_capacity_min)
      XJOB_TABLE_CAPACITY_MAX       = tostring(var.table_capacity_max)
      XJOB_TABLE_TARGET_UTILIZATION = tostring(var.table_target_utilization)
    }
  }
  lifecycle {
    precondition {
      # A ring bucket (one shard's fires of a second) owns its log pages (docs/aws.md#sparse-deployments).
      condition     = !contains([2, 4, 8, 16], var.shards) || var.log_pages % var.shards == 0
      error_message = "When shards divides 16, log_pages must be a multiple of shards."
    }
  }
}

resource "aws_cloudwatch_log_group" "ring" {
  name              = "/aws/lambda/${var.name}-ring"
  retention_in_days = var.log_retention_days
}

resource "aws_lambda_function" "ring" {
  function_name    = "${var.name}-ring"
  description      = "Waits to the exact millisecond of a ring bucket, dispatches its fast-lane fires itself and sends its slow-lane fires to the slow lane."
  filename         = "${path.module}/../../dist/ring.zip"
  source_code_hash = filebase64sha256("${path.module}/../../dist/ring.zip")
  handler          = "bootstrap"
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  memory_size      = var.ring_memory_size # the CPU share its buckets' dispatch needs (docs/aws.md)
  # lambdaapp.RingTimeout: wait to the instants (<= 2 s) + start the fast lane's chunks (<= 10 s, the rest is
  # queued) + run the last chunk (<= 30 s, as the dispatch function) + queue leftovers and flush counters (<= 4 s).
  timeout = 50
  role    = aws_iam_role.function["ring"].arn
  logging_config {
    log_format            = "JSON"
    system_log_level      = var.lambda_system_log_level
    application_log_level = "DEBUG"
    log_group             = aws_cloudwatch_log_group.ring.name
  }
  environment {
    variables = {
      XJOB_TABLE_PREFIX       = var.table_prefix
      XJOB_SHARDS             = tostring(var.shards)
      XJOB_LOG_PAGES          = tostring(var.log_pages)
      XJOB_LOG_LEVEL          = var.log_level
      XJOB_CUSTOM_METRICS     = tostring(var.custom_metrics)
      XJOB_RETRY_DELAY        = var.retry_delay
      XJOB_RETRY_BACKOFF      = tostring(var.retry_backoff)
      XJOB_RING_QUEUE_URL     = aws_sqs_queue.queue["ring"].url
      XJOB_DISPATCH_FUNCTION  = "${var.name}-dispatch" # the lanes: its asynchronous invocations (its name, not a reference to itself)
      XJOB_ACCESS_TOKEN_PARAM = var.access_token_parameter
      XJOB_SECRETS_REFRESH    = var.secrets_refresh
      XJOB_ALLOW_CIDRS        = var.executor_allow_cidrs
      XJOB_DENY_CIDRS         = var.executor_deny_cidrs
      XJOB_LOG_RETENTION_DAYS = var.trigger_log_retention_days
      XJOB_SESSION_KEY_PARAM  = var.session_key_parameter # HTTP jobs' secret headers
      XJOB_AWS_TARGET_ARNS    = var.aws_target_arns
      XJOB_ALARM_TOPIC_ARN    = aws_sns_topic.alarm.arn
    }
  }
  dynamic "vpc_config" { # the executors' VPC, when given
    for_each = local.in_vpc ? [1] : []
    content {
      subnet_ids         = var.vpc_subnet_ids
      security_group_ids = var.vpc_security_group_ids
    }
  }
  # Lambda creates the network interfaces with the role: its VPC grant first.
  depends_on = [aws_iam_role_policy.ring_vpc]

}

resource "aws_cloudwatch_log_group" "dispatch" {
  name              = "/aws/lambda/${var.name}-dispatch"
  retention_in_days = var.log_retention_days
}

resource "aws_lambda_function" "dispatch" {
  function_name    = "${var.name}-dispatch"
  description      = "Dispatches the lanes, its asynchronous invocations (slow lane, retries, child jobs, manual triggers, what the ring could not finish), and applies executor results."
  filename         = "${path.module}/../../dist/dispatch.zip"
  source_code_hash = filebase64sha256("${path.module}/../../dist/dispatch.zip")
  handler          = "bootstrap"
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  memory_size      = 256
  timeout          = 30 # executor calls: 3 s connect + 3 s read, a few per task with failover
  role             = aws_iam_role.function["dispatch"].arn
  logging_config {
    log_format            = "JSON"
    system_log_level      = var.lambda_system_log_level
    application_log_level = "DEBUG"
    log_group             = aws_cloudwatch_log_group.dispatch.name
  }
  environment {
    variables = {
      XJOB_TABLE_PREFIX              = var.table_prefix
      XJOB_SHARDS                    = tostring(var.shards)
      XJOB_LOG_PAGES                 = tostring(var.log_pages)
      XJOB_LOG_LEVEL                 = var.log_level
      XJOB_CUSTOM_METRICS            = tostring(var.custom_metrics)
      XJOB_RETRY_DELAY               = var.retry_delay
      XJOB_RETRY_BACKOFF             = tostring(var.retry_backoff)
      XJOB_ALLOW_ANY_TRIGGER_ADDRESS = tostring(var.allow_any_trigger_address)
      XJOB_RING_QUEUE_URL            = aws_sqs_queue.queue["ring"].url # tasks due later wait there (deferred)
      XJOB_DISPATCH_FUNCTION         = "${var.name}-dispatch"          # the lanes: its asynchronous invocations (its name, not a reference to itself)
      XJOB_ACCESS_TOKEN_PARAM        = var.access_token_parameter
      XJOB_SECRETS_REFRESH           = var.secrets_refresh
      XJOB_RESULTS_QUEUE_URL         = aws_sqs_queue.queue["results"].url
      XJOB_ALLOW_CIDRS               = var.executor_allow_cidrs
      XJOB_DENY_CIDRS                = var.executor_deny_cidrs
      XJOB_LOG_RETENTION_DAYS        = var.trigger_log_retention_days
      XJOB_METRICS_PER_JOB           = tostring(var.metrics_per_job)
      XJOB_SESSION_KEY_PARAM         = var.session_key_parameter # HTTP jobs' secret headers
      XJOB_AWS_TARGET_ARNS           = var.aws_target_arns
      XJOB_ALARM_TOPIC_ARN           = aws_sns_topic.alarm.arn
    }
  }
  dynamic "vpc_config" { # the executors' VPC, when given
    for_each = local.in_vpc ? [1] : []
    content {
      subnet_ids         = var.vpc_subnet_ids
      security_group_ids = var.vpc_security_group_ids
    }
  }
  # Lambda creates the network interfaces with the role: its VPC grant first.
  depends_on = [aws_iam_role_policy.dispatch_vpc]
  lifecycle {
    precondition {
      condition     = (length(var.vpc_subnet_ids) == 0) == (length(var.vpc_security_group_ids) == 0)
      error_message = "Give both vpc_subnet_ids and vpc_security_group_ids (the functions in a VPC), or neither (no VPC)."
    }
  }

}

resource "aws_cloudwatch_log_group" "callback" {
  name              = "/aws/lambda/${var.name}-callback"
  retention_in_days = var.log_retention_days
}

# The executor API: the one admin address of executors (output executor_admin_url), a function
# URL with authorization_type NONE. Lambda checks nothing; the function serves only the executor
# routes (/api/callback, /api/registry, /api/registryRemove, also under /xxl-job-admin), each
# behind the xxl-job access token, answers 404 to any other path and forwards job declarations
# to the HTTP API (XJOB_WEB_URL). A function URL has no route throttling: the reserved
# concurrency is the ceiling (Lambda answers 429 above it; executors retry).
resource "aws_lambda_function" "callback" {
  function_name    = "${var.name}-callback"
  description      = "The executor API (function URL): xxl-job /api/callback, /api/registry, /api/registryRemove."
  filename         = "${path.module}/../../dist/callback.zip"
  source_code_hash = filebase64sha256("${path.module}/../../dist/callback.zip")
  handler          = "bootstrap"
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  memory_size      = 256
  timeout          = 15 # executors time their admin calls out sooner
  role             = aws_iam_role.function["callback"].arn

  reserved_concurrent_executions = var.reserved_concurrency ? 15 : -1 # results and heartbeats keep their own share, apart from the web function's
  logging_config {
    log_format            = "JSON"
    system_log_level      = var.lambda_system_log_level
    application_log_level = "DEBUG"
    log_group             = aws_cloudwatch_log_group.callback.name
  }
  environment {
    variables = {
      XJOB_TABLE_PREFIX       = var.table_prefix
      XJOB_SHARDS             = tostring(var.shards)
      XJOB_LOG_PAGES          = tostring(var.log_pages)
      XJOB_LOG_LEVEL          = var.log_level
      XJOB_CUSTOM_METRICS     = tostring(var.custom_metrics)
      XJOB_RETRY_DELAY        = var.retry_delay
      XJOB_RETRY_BACKOFF      = tostring(var.retry_backoff)
      XJOB_RING_QUEUE_URL     = aws_sqs_queue.queue["ring"].url # tasks due later wait there (deferred)
      XJOB_DISPATCH_FUNCTION  = "${var.name}-dispatch"          # the lanes: its asynchronous invocations (its name, not a reference to itself)
      XJOB_ACCESS_TOKEN_PARAM = var.access_token_parameter
      XJOB_SECRETS_REFRESH    = var.secrets_refresh
      XJOB_RESULTS_QUEUE_URL  = aws_sqs_queue.queue["results"].url
      XJOB_ALLOW_CIDRS        = var.executor_allow_cidrs
      XJOB_DENY_CIDRS         = var.executor_deny_cidrs
      XJOB_LOG_RETENTION_DAYS = var.trigger_log_retention_days
      XJOB_WEB_URL            = aws_apigatewayv2_api.http.api_endpoint
      XJOB_METRICS_PER_JOB    = tostring(var.metrics_per_job)
      XJOB_ALARM_TOPIC_ARN    = aws_sns_topic.alarm.arn
    }
  }
}

resource "aws_lambda_function_url" "callback" {
  function_name      = aws_lambda_function.callback.function_name
  authorization_type = "NONE"
}

# A NONE function URL needs both permissions for the public principal: lambda:InvokeFunctionUrl
# (for that auth type) and, for URLs created since October 2025, lambda:InvokeFunction limited to
# invocations through the URL (the condition lambda:InvokedViaFunctionUrl).
resource "aws_lambda_permission" "callback_url" {
  statement_id           = "AllowPublicFunctionUrl"
  action                 = "lambda:InvokeFunctionUrl"
  function_name          = aws_lambda_function.callback.function_name
  principal              = "*"
  function_url_auth_type = "NONE"
}

resource "aws_lambda_permission" "callback_url_invoke" {
  statement_id             = "AllowInvokeViaFunctionUrl"
  action                   = "lambda:InvokeFunction"
  function_name            = aws_lambda_function.callback.function_name
  principal                = "*"
  invoked_via_function_url = true
}

resource "aws_cloudwatch_log_group" "registry" {
  name              = "/aws/lambda/${var.name}-registry"
  retention_in_days = var.log_retention_days
}

resource "aws_lambda_function" "registry" {
  function_name    = "${var.name}-registry"
  description      = "The periodic maintenance (EventBridge): callback sweep, group refresh, lost jobs, change resume."
  filename         = "${path.module}/../../dist/registry.zip"
  source_code_hash = filebase64sha256("${path.module}/../../dist/registry.zip")
  handler          = "bootstrap"
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  memory_size      = 256
  timeout          = 60 # maintenance may use the minute
  role             = aws_iam_role.function["registry"].arn

  reserved_concurrent_executions = var.reserved_concurrency ? 2 : -1 # consecutive minutes' runs may overlap
  logging_config {
    log_format            = "JSON"
    system_log_level      = var.lambda_system_log_level
    application_log_level = "DEBUG"
    log_group             = aws_cloudwatch_log_group.registry.name
  }
  environment {
    variables = {
      XJOB_TABLE_PREFIX       = var.table_prefix
      XJOB_SHARDS             = tostring(var.shards)
      XJOB_LOG_PAGES          = tostring(var.log_pages)
      XJOB_LOG_LEVEL          = var.log_level
      XJOB_CUSTOM_METRICS     = tostring(var.custom_metrics)
      XJOB_RETRY_DELAY        = var.retry_delay
      XJOB_RETRY_BACKOFF      = tostring(var.retry_backoff)
      XJOB_RING_QUEUE_URL     = aws_sqs_queue.queue["ring"].url # tasks due later wait there (deferred)
      XJOB_DISPATCH_FUNCTION  = "${var.name}-dispatch"          # the lanes: its asynchronous invocations (its name, not a reference to itself)
      XJOB_ALLOW_CIDRS        = var.executor_allow_cidrs
      XJOB_DENY_CIDRS         = var.executor_deny_cidrs
      XJOB_LOG_RETENTION_DAYS = var.trigger_log_retention_days
      XJOB_METRICS_PER_JOB    = tostring(var.metrics_per_job)
      XJOB_ALARM_TOPIC_ARN    = aws_sns_topic.alarm.arn
    }
  }
}

resource "aws_cloudwatch_log_group" "web" {
  name              = "/aws/lambda/${var.name}-web"
  retention_in_days = var.log_retention_days
}

resource "aws_lambda_function" "web" {
  function_name    = "${var.name}-web"
  description      = "The console (/ redirects to it), the /v1 admin API, /metrics, /healthz and executors' job declarations."
  filename         = "${path.module}/../../dist/web.zip"
  source_code_hash = filebase64sha256("${path.module}/../../dist/web.zip")
  handler          = "bootstrap"
  runtime          = "provided.al2023"
  architectures    = ["arm64"]
  memory_size      = 256
  timeout          = 30 # the HTTP API cuts a request at 30 s
  role             = aws_iam_role.function["web"].arn

  reserved_concurrent_executions = var.reserved_concurrency ? 5 : -1 # a ceiling on what a flood of sign-ins (argon2id) or admin calls can use
  logging_config {
    log_format            = "JSON"
    system_log_level      = var.lambda_system_log_level
    application_log_level = "DEBUG"
    log_group             = aws_cloudwatch_log_group.web.name
  }
  environment {
    variables = {
      XJOB_TABLE_PREFIX              = var.table_prefix
      XJOB_SHARDS                    = tostring(var.shards)
      XJOB_LOG_PAGES                 = tostring(var.log_pages)
      XJOB_LOG_LEVEL                 = var.log_level
      XJOB_CUSTOM_METRICS            = tostring(var.custom_metrics)
      XJOB_RETRY_DELAY               = var.retry_delay
      XJOB_RETRY_BACKOFF             = tostring(var.retry_backoff)
      XJOB_ALLOW_ANY_TRIGGER_ADDRESS = tostring(var.allow_any_trigger_address)
      XJOB_START_DECLARED_JOBS       = tostring(var.start_declared_jobs)
      XJOB_RING_LEAD                 = var.ring_lead # the admin's pushes of new fires
      XJOB_RING_QUEUE_URL            = aws_sqs_queue.queue["ring"].url
      XJOB_DISPATCH_FUNCTION         = "${var.name}-dispatch" # the lanes: its asynchronous invocations (its name, not a reference to itself)
      XJOB_ACCESS_TOKEN_PARAM        = var.access_token_parameter
      XJOB_SECRETS_REFRESH           = var.secrets_refresh
      XJOB_ADMIN_TOKEN_PARAM         = var.admin_token_parameter
      XJOB_SESSION_KEY_PARAM         = var.session_key_parameter
      XJOB_ALLOW_CIDRS               = var.executor_allow_cidrs
      XJOB_DENY_CIDRS                = var.executor_deny_cidrs
      XJOB_LOG_RETENTION_DAYS        = var.trigger_log_retention_days
      XJOB_GLUE_POLICY               = var.glue_policy
      XJOB_METRICS_PER_JOB           = tostring(var.metrics_per_job)
      XJOB_AWS_TARGET_ARNS           = var.aws_target_arns
      XJOB_ALARM_TOPIC_ARN           = aws_sns_topic.alarm.arn
    }
  }
  dynamic "vpc_config" { # the executors' VPC, when given
    for_each = local.in_vpc ? [1] : []
    content {
      subnet_ids         = var.vpc_subnet_ids
      security_group_ids = var.vpc_security_group_ids
    }
  }
  # Lambda creates the network interfaces with the role: its VPC grant first.
  depends_on = [aws_iam_role_policy.web_vpc]

}
