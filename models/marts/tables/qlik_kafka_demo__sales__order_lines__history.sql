{{ config(materialized='view') }}
{{ cdc_typed_history("qlik_kafka_demo", "SALES", "ORDER_LINES") }}
