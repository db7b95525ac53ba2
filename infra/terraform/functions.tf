# The six functions (awsconfig.Functions) and the two queues, each by name: the per-function
# roles, role policies and alarms and the per-queue queues, dead-letter queues and alarms expand
# over these maps (for_each), so one change is made once for all of them. infra_test.go expands
# them as Terraform does.

locals {
  # A function's role policy: exactly its awsconfig grants (iam.tf).
  functions = {
    scan     = { policy = data.aws_iam_policy_document.scan.json }
    ring     = { policy = data.aws_iam_policy_document.ring.json }
    dispatch = { policy = data.aws_iam_policy_document.dispatch.json }
    callback = { policy = data.aws_iam_policy_document.callback.json }
    registry = { policy = data.aws_iam_policy_document.registry.json }
    web      = { policy = data.aws_iam_policy_document.web.json }
  }

  # Visibility timeout = 6 x the consuming function's timeout (AWS guidance for SQS event sources).
  queues = {
    ring    = { visibility = 300 } # ring timeout 50 s x 6 (a failed bucket sets its own, shorter retry delay)
    results = { visibility = 180 } # executor results, applied by the dispatch function (timeout 30 s x 6)
  }

  # The oldest message's age past which a queue is not being consumed.
  queue_age_alarms = {
    ring = { seconds = 1020, description = "ring buckets are sent up to 14 minutes ahead (the scan advance); older than that plus two minutes, the ring is not consuming" }
  }

  # Every table, for its throttling alarm.
  tables = {
    jobs     = aws_dynamodb_table.jobs.name
    groups   = aws_dynamodb_table.groups.name
    logpages = aws_dynamodb_table.log_pages.name
    registry = aws_dynamodb_table.registry.name
    leases   = aws_dynamodb_table.leases.name
    reports  = aws_dynamodb_table.reports.name
    counters = aws_dynamodb_table.counters.name
    console  = aws_dynamodb_table.console.name
  }
}

# Deployments made before the maps keep their resources: Terraform moves them to the new addresses
# instead of replacing them (a replaced queue would lose the messages in flight).
moved {
  from = aws_sqs_queue.ring
  to   = aws_sqs_queue.queue["ring"]
}

moved {
  from = aws_sqs_queue.ring_dlq
  to   = aws_sqs_queue.dlq["ring"]
}

moved {
  from = aws_sqs_queue.results
  to   = aws_sqs_queue.queue["results"]
}

moved {
  from = aws_sqs_queue.results_dlq
  to   = aws_sqs_queue.dlq["results"]
}

moved {
  from = aws_iam_role.scan
  to   = aws_iam_role.function["scan"]
}

moved {
  from = aws_iam_role_policy.scan
  to   = aws_iam_role_policy.function["scan"]
}

moved {
  from = aws_cloudwatch_metric_alarm.scan_errors
  to   = aws_cloudwatch_metric_alarm.function_errors["scan"]
}

moved {
  from = aws_cloudwatch_metric_alarm.scan_throttles
  to   = aws_cloudwatch_metric_alarm.function_throttles["scan"]
}

moved {
  from = aws_iam_role.ring
  to   = aws_iam_role.function["ring"]
}

moved {
  from = aws_iam_role_policy.ring
  to   = aws_iam_role_policy.function["ring"]
}

moved {
  from = aws_cloudwatch_metric_alarm.ring_errors
  to   = aws_cloudwatch_metric_alarm.function_errors["ring"]
}

moved {
  from = aws_cloudwatch_metric_alarm.ring_throttles
  to   = aws_cloudwatch_metric_alarm.function_throttles["ring"]
}

moved {
  from = aws_iam_role.dispatch
  to   = aws_iam_role.function["dispatch"]
}

moved {
  from = aws_iam_role_policy.dispatch
  to   = aws_iam_role_policy.function["dispatch"]
}

moved {
  from = aws_cloudwatch_metric_alarm.dispatch_errors
  to   = aws_cloudwatch_metric_alarm.function_errors["dispatch"]
}

moved {
  from = aws_cloudwatch_metric_alarm.dispatch_throttles
  to   = aws_cloudwatch_metric_alarm.function_throttles["dispatch"]
}

moved {
  from = aws_iam_role.callback
  to   = aws_iam_role.function["callback"]
}

moved {
  from = aws_iam_role_policy.callback
  to   = aws_iam_role_policy.function["callback"]
}

moved {
  from = aws_cloudwatch_metric_alarm.callback_errors
  to   = aws_cloudwatch_metric_alarm.function_errors["callback"]
}

moved {
  from = aws_cloudwatch_metric_alarm.callback_throttles
  to   = aws_cloudwatch_metric_alarm.function_throttles["callback"]
}

moved {
  from = aws_iam_role.registry
  to   = aws_iam_role.function["registry"]
}

moved {
  from = aws_iam_role_policy.registry
  to   = aws_iam_role_policy.function["registry"]
}

moved {
  from = aws_cloudwatch_metric_alarm.registry_errors
  to   = aws_cloudwatch_metric_alarm.function_errors["registry"]
}

moved {
  from = aws_cloudwatch_metric_alarm.registry_throttles
  to   = aws_cloudwatch_metric_alarm.function_throttles["registry"]
}

moved {
  from = aws_iam_role.web
  to   = aws_iam_role.function["web"]
}

moved {
  from = aws_iam_role_policy.web
  to   = aws_iam_role_policy.function["web"]
}

moved {
  from = aws_cloudwatch_metric_alarm.web_errors
  to   = aws_cloudwatch_metric_alarm.function_errors["web"]
}

moved {
  from = aws_cloudwatch_metric_alarm.web_throttles
  to   = aws_cloudwatch_metric_alarm.function_throttles["web"]
}

moved {
  from = aws_cloudwatch_metric_alarm.jobs_table_throttles
  to   = aws_cloudwatch_metric_alarm.table_throttles["jobs"]
}

moved {
  from = aws_cloudwatch_metric_alarm.groups_table_throttles
  to   = aws_cloudwatch_metric_alarm.table_throttles["groups"]
}

moved {
  from = aws_cloudwatch_metric_alarm.log_pages_table_throttles
  to   = aws_cloudwatch_metric_alarm.table_throttles["logpages"]
}

moved {
  from = aws_cloudwatch_metric_alarm.registry_table_throttles
  to   = aws_cloudwatch_metric_alarm.table_throttles["registry"]
}

moved {
  from = aws_cloudwatch_metric_alarm.leases_table_throttles
  to   = aws_cloudwatch_metric_alarm.table_throttles["leases"]
}

moved {
  from = aws_cloudwatch_metric_alarm.reports_table_throttles
  to   = aws_cloudwatch_metric_alarm.table_throttles["reports"]
}

moved {
  from = aws_cloudwatch_metric_alarm.counters_table_throttles
  to   = aws_cloudwatch_metric_alarm.table_throttles["counters"]
}

moved {
  from = aws_cloudwatch_metric_alarm.console_table_throttles
  to   = aws_cloudwatch_metric_alarm.table_throttles["console"]
}

moved {
  from = aws_cloudwatch_metric_alarm.ring_age
  to   = aws_cloudwatch_metric_alarm.queue_age["ring"]
}

