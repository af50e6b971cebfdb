{{ config(materialized='view') }}
{{ cdc_typed_history("qlik_ct_demo", "HR", "EMPLOYEES") }}
