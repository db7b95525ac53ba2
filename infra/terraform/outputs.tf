output "executor_admin_url" {
  description = "The executors' admin address (xxl.job.admin.addresses): the executor API's function URL."
  value       = aws_lambda_function_url.callback.function_url
}

output "admin_url" {
  description = "The admin API's address: give it to the xjob CLI (executors take executor_admin_url)."
  value       = aws_apigatewayv2_api.http.api_endpoint
}

output "console_url" {
  description = "The web console (create the first user with the admin token first; docs/aws.md)."
  value       = "${aws_apigatewayv2_api.http.api_endpoint}/console/"
}

output "dispatch_function_name" {
  description = "aws lambda invoke --function-name <this> --payload '{\"jobId\":1}' triggers a job by hand."
  value       = aws_lambda_function.dispatch.function_name
}

output "ring_queue_url" {
  value = aws_sqs_queue.queue["ring"].url
}

output "dispatch_dead_letter_queue_url" {
  description = "Lane events that failed every attempt or expired, as Lambda invocation records (requestPayload holds the tasks)."
  value       = aws_sqs_queue.dispatch_dlq.url
}

output "alarm_topic_arn" {
  value = aws_sns_topic.alarm.arn
}
